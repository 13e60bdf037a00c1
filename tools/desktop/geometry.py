"""Screen and screenshot coordinates: the model sees at most 1280×800 and points in that space."""

from __future__ import annotations

from dataclasses import dataclass

MAX_MODEL_WIDTH = 1280
MAX_MODEL_HEIGHT = 800


class OutOfBounds(ValueError):
    """A point outside the screenshot the model was shown."""


@dataclass(frozen=True)
class Geometry:
    """A screen of `width`×`height` pixels shown to the model as `model_width`×`model_height`."""

    width: int
    height: int
    model_width: int
    model_height: int

    @classmethod
    def for_screen(cls, width: int, height: int) -> Geometry:
        """Scale down (never up), keeping the aspect ratio, to fit in 1280×800."""
        factor = min(1.0, MAX_MODEL_WIDTH / width, MAX_MODEL_HEIGHT / height)
        return cls(width, height, max(1, round(width * factor)), max(1, round(height * factor)))

    @property
    def scaled(self) -> bool:
        """Whether screenshot coordinates differ from screen coordinates."""
        return (self.model_width, self.model_height) != (self.width, self.height)

    def to_screen(self, x: int, y: int) -> tuple[int, int]:
        """A point of the screenshot → the screen pixel under it; OutOfBounds when outside."""
        if not (0 <= x < self.model_width and 0 <= y < self.model_height):
            raise OutOfBounds(
                f"({x}, {y}) is outside the screenshot: x must be 0..{self.model_width - 1} "
                f"and y 0..{self.model_height - 1}"
            )
        sx = min(self.width - 1, round(x * self.width / self.model_width))
        sy = min(self.height - 1, round(y * self.height / self.model_height))
        return sx, sy

    def to_model(self, sx: int, sy: int) -> tuple[int, int]:
        """A screen pixel → screenshot coordinates (clamped into the screenshot)."""
        x = round(sx * self.model_width / self.width)
        y = round(sy * self.model_height / self.height)
        return min(max(x, 0), self.model_width - 1), min(max(y, 0), self.model_height - 1)

    def describe(self) -> str:
        """'screen 1920×1200, shown as 1280×800' or 'screen 1280×800'."""
        screen = f"screen {self.width}×{self.height}"
        if self.scaled:
            return f"{screen}, shown as {self.model_width}×{self.model_height}"
        return screen
