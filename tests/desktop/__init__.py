"""A real X desktop for computer_use tests: a private Xvfb and a small Tk window."""
