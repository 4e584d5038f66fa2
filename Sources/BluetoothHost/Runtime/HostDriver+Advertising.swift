import BluetoothWire

// Advertising on the driver thread: requests go to the AdvertisingRuntime, its commands to
// the controller, their answers back to it.
extension HostDriver {
    func handle(_ request: AdvertisingRequest) {
        switch request {
        case .start(let config, let c): startAdvertising(config, c)
        case .stop(let set, let c): stopAdvertising(set, c)
        }
    }

    func startAdvertising(_ config: AdvertisingConfiguration, _ c: CheckedContinuation<Result<AdvertisingSetInfo, HostError>, Never>) {
        guard !closing, info != nil else {
            c.resume(returning: .failure(.hostClosed))
            return
        }
        send(advertising.start(config, c))
    }

    func stopAdvertising(_ set: UInt8?, _ c: CheckedContinuation<Void, Never>) {
        send(advertising.stop(set, c))
    }

    /// Submits the runtime's commands; one that cannot be sent is answered with why.
    func send(_ commands: [AdvertisingRuntime.Command]) {
        for (command, purpose) in commands {
            if let error = submit(command, waiter: .advertising(purpose)) {
                send(advertising.answered(purpose, .failure(error)))
            }
        }
    }
}
