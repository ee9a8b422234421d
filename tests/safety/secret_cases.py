"""The secret list: every kind of secret openheim must keep out of its output, one per line.

``FORMATS`` are caught by their shape (``KEY_FORMATS``), ``REGISTERED`` only because they were
registered (a provider key from config, a password from a ``.env`` file), ``PREFIXED`` keep a
readable prefix. Adding a case to a table adds it to every test that reads the table.
"""

from __future__ import annotations

PROJ_KEY = "sk-proj-" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6kM9n"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEA1c2V5c2VjcmV0bWF0ZXJpYWw0MTIzNDU2Nzg5MDEyMzQ1Njc4\n"
    "OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2\n"
    "-----END RSA PRIVATE KEY-----"
)
FORMATS = {
    "openai legacy": "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4",
    "openai project": PROJ_KEY,
    "anthropic": "sk-ant-api03-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0Ed9Cb8Aa7-_xyzAA",
    "google": "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "github classic": "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "github fine-grained": "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCD",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "slack": "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "private key": PEM,
}
REGISTERED = {
    "provider key of no known format": "fake-provider-key-0123456789abcdef",
    "password from a .env file": "correct horse battery staple",
    "short password": "Hunter2!x",
    "password with regex characters": "a+b(c)*[d]?x|y",
}
PREFIXED = {
    "bearer header": ("Authorization: Bearer ", "eyJhbGciOi.J9-WIi_OiIx"),
    "basic header": ('{"authorization": "Basic ', 'dXNlcjpwYXNzd29yZA=="}'),
    "password in a URL": ("url https://bob:", "hunter2pass@example.com/r.git"),
}
"""(the kept prefix, the secret followed by what stays)."""
