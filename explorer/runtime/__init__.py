"""What every engine runs on: verdicts and exit codes, signals, limits, memory, worker threads, the one process pool and its supervised jobs, files in and out."""
