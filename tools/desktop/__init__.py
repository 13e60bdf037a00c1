"""The X desktop `computer_use` operates: Xvfb, xdotool/xclip input, mss screenshots.

- `geometry`: screen ↔ screenshot (model) coordinates, bounds-checked;
- `screen`: grab the display with mss and scale it for the model (Pillow);
- `pointer`: where the pointer is (XQueryPointer over ctypes, no subprocess);
- `xinput`: mouse and keyboard through `xdotool` argv lists, non-ASCII text via `xclip`;
- `xvfb`: start and stop a private Xvfb (`computer_use.start_xvfb`, tests, benchmarks).
"""
