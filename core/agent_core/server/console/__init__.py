"""The web console: static files shipped in this folder, served by :mod:`.files`."""
