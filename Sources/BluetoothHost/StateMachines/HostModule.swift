// BluetoothHost: the host core.
//
// StateMachines/ holds sans-I/O logic: structs that take packets and the current time and
// return packets to send, timers to arm and events. They import only BluetoothWire.
// HostError.swift, beside these folders, is the module's one error type: the machines
// fail with it and the runtime adds the transport's failures (TransportError) to it.
// Runtime/ holds the single I/O driver (poll + timers on one thread) and the async API.
