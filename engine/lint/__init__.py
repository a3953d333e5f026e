"""lint."""
