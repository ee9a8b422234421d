"""Configuration: files, environment, flags, provider resolution and trusted folders."""
