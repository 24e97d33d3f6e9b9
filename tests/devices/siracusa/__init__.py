"""Tests of pondlib.devices.siracusa."""
