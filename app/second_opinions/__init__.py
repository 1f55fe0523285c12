"""Second opinions: a second assessor's answer on a judged pair, and "ask me instead". Which
questions are routed to a second assessor, and the table that records it, belong to the judging
loop that consults them on every question (:mod:`app.judging.routing`,
:mod:`app.judging.routing_repository`)."""
