"""Files on disk: crash-safe writes and reads of files that may be hostile."""
