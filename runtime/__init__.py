"""The Runtime daemon: transport, dispatcher, admission handles, executors and harness
adapters. It imports only `runtime.proto`, the standard library and its own dependencies;
never Core."""
