"""Support pieces with no knowledge of pages: files written whole, the clock, the machine's
trust key, the did-you-mean hints and the child processes."""
