import BluetoothWire

// Advertising on the driver thread: the Advertiser state machine (legacy or extended sets),
// its commands, and the callers waiting for a set to start or stop.
extension HostDriver {
    func startAdvertising(_ config: AdvertisingConfiguration, _ c: CheckedContinuation<Result<AdvertisingSetInfo, HostError>, Never>) {
        guard !closing, info != nil else {
            c.resume(returning: .failure(.hostClosed))
            return
        }
        guard advertisingStarts[config.advertisingSet] == nil else {
            c.resume(returning: .failure(HostError(.busy, "advertising set \(config.advertisingSet) is already being started")))
            return
        }
        do throws(HostError) {
            let actions = try advertiser.start(config)
            advertisingStarts[config.advertisingSet] = c
            execute(actions)
        } catch {
            c.resume(returning: .failure(error))
        }
    }

    func stopAdvertising(_ set: UInt8?, _ c: CheckedContinuation<Void, Never>) {
        let pending = advertiser.pendingSets(set)
        guard !pending.isEmpty else {
            c.resume()
            return
        }
        advertisingStops.append((Set(pending), c))
        execute(advertiser.stop(set))
    }

    func execute(_ actions: [AdvertisingAction]) {
        for action in actions {
            switch action {
            case .send(let command, let purpose):
                if let error = submit(command, waiter: .advertising(purpose)) {
                    execute(advertiser.commandAnswered(purpose, .failure(error)))
                }
            case .started(let set, let result):
                advertisingStarts.removeValue(forKey: set)?.resume(returning: result)
            case .stopped(let set):
                var waiting: [(sets: Set<UInt8>, continuation: CheckedContinuation<Void, Never>)] = []
                for var w in advertisingStops {
                    w.sets.remove(set)
                    if w.sets.isEmpty { w.continuation.resume() } else { waiting.append(w) }
                }
                advertisingStops = waiting
            }
        }
    }
}
