"""What the command line's tests share: the sizes of their files."""

BIG = 42450
RECORDS = 5000
