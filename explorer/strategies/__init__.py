"""The engines behind `explorer.check`, chosen by its table: sequential BFS/DFS, the array engine, partitions, swarm, objects on processes."""
