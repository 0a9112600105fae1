"""What every engine runs on: verdicts and exit codes, signals, limits, memory, worker threads and supervised processes, files in and out."""
