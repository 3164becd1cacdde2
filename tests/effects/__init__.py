"""Tests that prove advice by its effect: the tuned kernel measurably does what the advice says."""
