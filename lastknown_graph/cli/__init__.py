"""The `lastknown` command line: a thin layer over Memory and the stores."""
