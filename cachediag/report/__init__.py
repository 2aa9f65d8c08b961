"""The public JSON contract and the tables people read."""
