"""The desktop window: PySide6 widgets, item models over the run store, and the worker thread.

Nothing here is imported by the engine or the store; the window drives the engine's generator
through `worker.TrainWorker` and reads the store through its own connection.
"""
