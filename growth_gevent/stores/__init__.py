"""The stores behind one contract (base.py): in memory for one process, Redis for several."""
