"""The array engine: BFS over packed rows, its table, its walkers on threads, its worker processes."""
