"""Settings: the packaged TOML (``default_config.toml``, the only source of defaults), its types
(``settings``), the layered loader (``load``) and the hook's snapshot of what it reads (``snapshot``)."""
