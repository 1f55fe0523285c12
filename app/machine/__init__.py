"""Machine judges in the service: a task's judge, its prepared opinions and its calibration."""
