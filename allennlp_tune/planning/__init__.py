"""
Planning: the cost model (seconds per epoch and memory by encoder, mode and task size) and the
plan a grid or a comparison prints before it starts (`plan`). Nothing here trains or reads runs.
"""
