"""The team store: PostgreSQL + pgvector shared by a team (``store``), its schema and roles (``schema``,
``admin``) and the connection (``connect``)."""
