"""The built-in detectors, one module each, named after the detector's id.

They are plugins like any other: this distribution's entry points (pyproject.toml)
name them, and that table is the only list of them.
"""
