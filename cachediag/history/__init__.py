"""The history read once: a private on-disk index of the rows each transcript has
contributed, so reports over the whole history read only what changed since the last."""
