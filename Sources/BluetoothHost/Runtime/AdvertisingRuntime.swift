import BluetoothWire

/// Advertising's part of the driver: the ``Advertiser`` machine and the callers waiting for a
/// set to start or stop. It answers its callers itself and hands the driver the commands to
/// send; the driver routes requests, command answers and controller events to it.
struct AdvertisingRuntime {
    typealias Start = CheckedContinuation<Result<AdvertisingSetInfo, HostError>, Never>
    /// A command for the controller, and what its answer is for.
    typealias Command = (command: any HCICommandEncodable, purpose: AdvertisingCommandPurpose)

    private(set) var advertiser = Advertiser()
    private var starts: [UInt8: Start] = [:]
    private var stops: [(sets: Set<UInt8>, continuation: CheckedContinuation<Void, Never>)] = []

    /// The controller is known: its capabilities choose legacy or extended advertising.
    mutating func controllerReady(_ info: ControllerInfo) {
        advertiser = Advertiser(capabilities: AdvertisingCapabilities(info))
    }

    /// Something waits on the controller's events: a set starting or stopping, or a
    /// connectable set a central may connect to.
    var awaitsEvents: Bool { !starts.isEmpty || !stops.isEmpty || advertiser.hasConnectableSets }

    /// Starts a set; a set already starting, or one the advertiser refuses, fails `c` at once.
    mutating func start(_ config: AdvertisingConfiguration, _ c: Start) -> [Command] {
        guard starts[config.advertisingSet] == nil else {
            c.resume(returning: .failure(HostError(.busy, "advertising set \(config.advertisingSet) is already being started")))
            return []
        }
        do throws(HostError) {
            let actions = try advertiser.start(config)
            starts[config.advertisingSet] = c
            return deliver(actions)
        } catch {
            c.resume(returning: .failure(error))
            return []
        }
    }

    /// Stops one set (nil: all); `c` resumes when every set named has stopped.
    mutating func stop(_ set: UInt8?, _ c: CheckedContinuation<Void, Never>) -> [Command] {
        let pending = advertiser.pendingSets(set)
        guard !pending.isEmpty else {
            c.resume()
            return []
        }
        stops.append((Set(pending), c))
        return deliver(advertiser.stop(set))
    }

    /// The answer to one of its commands (a command the driver could not send included).
    mutating func answered(_ purpose: AdvertisingCommandPurpose, _ result: CommandResult) -> [Command] {
        deliver(advertiser.commandAnswered(purpose, result))
    }

    /// LE Advertising Set Terminated.
    mutating func setTerminated(_ event: LEAdvertisingSetTerminated) -> [Command] {
        deliver(advertiser.advertisingSetTerminated(event))
    }

    /// A central connected through a set, or such a link closed: the set restarts as needed.
    mutating func peripheralLink(opened handle: UInt16) -> [Command] { deliver(advertiser.peripheralLinkOpened(handle: handle)) }

    mutating func peripheralLink(closed handle: UInt16) -> [Command] { deliver(advertiser.peripheralLinkClosed(handle: handle)) }

    /// The command that leaves the controller quiet, while it advertises (the host closes).
    var quietCommand: (any HCICommandEncodable)? { advertiser.isActive ? advertiser.quietCommand() : nil }

    /// The host stops: every caller is answered (starts fail with `error`).
    mutating func close(_ error: HostError) -> [Command] {
        let commands = deliver(advertiser.closeAll(error))
        for w in stops { w.continuation.resume() }
        stops = []
        return commands
    }

    /// Answers the callers the actions finish; returns the commands to send.
    private mutating func deliver(_ actions: [AdvertisingAction]) -> [Command] {
        var commands: [Command] = []
        for action in actions {
            switch action {
            case .send(let command, let purpose):
                commands.append((command, purpose))
            case .started(let set, let result):
                starts.removeValue(forKey: set)?.resume(returning: result)
            case .stopped(let set):
                var waiting: [(sets: Set<UInt8>, continuation: CheckedContinuation<Void, Never>)] = []
                for var w in stops {
                    w.sets.remove(set)
                    if w.sets.isEmpty { w.continuation.resume() } else { waiting.append(w) }
                }
                stops = waiting
            }
        }
        return commands
    }
}
