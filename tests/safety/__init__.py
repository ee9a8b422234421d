"""Tests of the safety layers."""
