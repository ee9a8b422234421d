"""Keeping secrets out of the model's sight and out of every place text is written."""
