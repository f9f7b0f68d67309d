"""Training: optimizers, schedules, distribution strategies, the train loop."""
