"""Data formats from outside: JSON, TOML, JSON schema, typed records, URLs and safe regular
expressions."""
