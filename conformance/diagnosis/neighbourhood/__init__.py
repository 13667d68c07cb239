"""The oracle's generated neighbourhood: the likely bugs nobody catalogued (see ``generate`` and ``search``)."""
