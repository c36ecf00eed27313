"""`watch.toml` read into typed objects (the model, and loading with errors that name the key and the
file); a compose file read as Compose interpolates it (with its `.env`) for port, GPUs, status,
spec decode and what its path says; the failure-signature model and its built-in families.

May import: core.
"""
