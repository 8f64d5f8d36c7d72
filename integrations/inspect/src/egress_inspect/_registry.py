"""Loaded by inspect_ai through the ``inspect_ai`` entry point: importing
the package registers the ``egress-netns`` sandbox provider."""

from . import _netns  # noqa: F401
