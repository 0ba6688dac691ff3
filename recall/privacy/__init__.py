"""The user's files stay the user's: private files and folders (``paths``), ownership and peer checks
(``trust``), secrets masked before anything is kept (``masking``), text made safe before an agent or a
terminal sees it (``safetext``)."""
