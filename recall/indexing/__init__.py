"""The one write path (``indexer.Indexer``), media chunks for a multimodal model (``media``), past
conversations' titles as a source (``conversations``) and the first index's progress (``progress``)."""
