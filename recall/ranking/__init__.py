"""From a message to what is said: search (``search``: a note scores by its best chunk), fusion with BM25
(``fusion``), the decision (``selector``, ``learned``), and the thresholds fitted on the user's own notes
(``calibration``, ``negatives``)."""
