"""The store contract every store of notes keeps (``contract.NoteStore``) and the local store behind it
(``local.LocalStore``: SQLite + FAISS generations); the team store is ``recall.team``."""
