"""Study design: which assessor judges which query with which tool (``assignment``), which
documents a query's pool holds (``pools``), pools built from many runs with adaptive judging
orders (``campaign_pools``) and simulated assessors for budgeting a study and comparing
strategies (``simulation``).
"""
