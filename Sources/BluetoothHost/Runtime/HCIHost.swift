import BluetoothTransport
import BluetoothSecurity
import BluetoothWire
import Synchronization

/// Options for ``HCIHost/open(transport:options:)``.
public struct HostOptions: Sendable {
    /// How long to wait for the controller to answer a command.
    public var commandTimeout: Duration
    /// Called on the driver thread with every packet (H4 indicator included) received
    /// (`sent == false`) or about to be written (`sent == true`). The buffer is valid only
    /// during the call. Keep it fast: it runs inside the I/O loop.
    public var packetObserver: (@Sendable (_ packet: UnsafeRawBufferPointer, _ sent: Bool) -> Void)?
    /// How this host pairs when a peer starts it (a central's Pairing Request, a peripheral's
    /// Security Request) and the default for ``LEConnection/pair(configuration:agent:)``;
    /// nil refuses pairing (Pairing Not Supported).
    public var security: SMPConfiguration?
    /// Who answers passkeys and number comparisons for pairings the peer starts.
    public var pairingAgent: PairingAgent
    /// Where bonds are kept: ``LEConnection/pair(configuration:agent:)`` stores them, a
    /// peripheral answers LE Long Term Key Requests from them, ``LEConnection/encryptWithBond()``
    /// uses them. nil: nothing is stored.
    public var bondStore: BondStore?
    /// Privacy: this host's Identity Resolving Key (``BondStore/localIdentityResolvingKey()``).
    /// It is distributed with the public address as identity when bonding, so bonded peers
    /// recognise this host behind the resolvable private addresses it advertises from
    /// (``AdvertisingConfiguration/OwnAddress/resolvablePrivate(_:)``). nil: none is given.
    public var identityResolvingKey: UInt128?
    /// Whether a pairing a bonded peer starts may replace its bond without MITM protection.
    /// False (the default, as BlueZ's `JustWorksRepairing=never` and Zephyr): anyone with
    /// the peer's address could otherwise pair Just Works and take the bond over, so such a
    /// pairing must be authenticated (and as strong as the bond), else it fails with
    /// Authentication Requirements and the old bond stays. `hcigatt unpair` lifts it for one
    /// device; `serve --allow-repairing` sets this.
    public var allowsRepairing: Bool

    /// The defaults: 5 s per command, no observer, Just Works pairing, nothing stored,
    /// re-pairing over a bond refused without MITM.
    public init(commandTimeout: Duration = .seconds(5),
                packetObserver: (@Sendable (_ packet: UnsafeRawBufferPointer, _ sent: Bool) -> Void)? = nil,
                security: SMPConfiguration? = SMPConfiguration(), pairingAgent: PairingAgent = .justWorks,
                bondStore: BondStore? = nil, identityResolvingKey: UInt128? = nil, allowsRepairing: Bool = false) {
        self.allowsRepairing = allowsRepairing
        self.commandTimeout = commandTimeout
        self.packetObserver = packetObserver
        self.security = security
        self.pairingAgent = pairingAgent
        self.bondStore = bondStore
        self.identityResolvingKey = identityResolvingKey
    }
}

/// A Bluetooth LE host on one controller.
///
/// One driver thread per host owns the transport and the sans-I/O state machines
/// (``HCICommandFlow``, ``ControllerInitializer``, ``Scanner``); this API queues requests
/// to it and awaits the answers. When the transport closes or fails, every pending
/// command fails and the scan stream ends with that error.
public final class HCIHost: Sendable {
    let driver: HostDriver
    /// What the init sequence learned about the controller.
    public let info: ControllerInfo
    private let scanIDs = Atomic<UInt64>(1)

    private init(driver: HostDriver, info: ControllerInfo) {
        self.driver = driver
        self.info = info
    }

    deinit {
        driver.post(.close(nil))
    }

    /// Starts the driver on `transport` and runs the controller init sequence.
    public static func open(transport: any HCITransport, options: HostOptions = .init()) async throws(HostError) -> HCIHost {
        let driver = try HostDriver(transport: transport, options: options)
        if let error = driver.start() {
            transport.close()
            throw error
        }
        let result = await withCheckedContinuation { (c: CheckedContinuation<Result<ControllerInfo, HostError>, Never>) in
            driver.post(.initialize(c))
        }
        switch result {
        case .success(let info):
            return HCIHost(driver: driver, info: info)
        case .failure(let error):
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in driver.post(.close(c)) }
            throw error
        }
    }

    /// Sends a command and returns its Command Complete return parameters, or the status
    /// of its Command Status. Throws `.commandFailed` on a non-success status and
    /// `.commandTimeout` when the controller does not answer within `timeout`
    /// (default: ``HostOptions/commandTimeout``).
    public func send(_ command: some HCICommandEncodable, timeout: Duration? = nil) async throws(HostError) -> CommandReturn {
        let packet: [UInt8]
        do throws(WireError) {
            packet = try command.encodedH4()
        } catch {
            throw HostError(.malformedPacket(error), "cannot encode \(HostError.commandName(type(of: command).opcode)): \(error)")
        }
        return try await send(packet: packet, opcode: type(of: command).opcode, timeout: timeout)
    }

    /// Sends an already encoded H4 command packet (indicator included).
    public func send(packet: [UInt8], opcode: HCIOpcode, timeout: Duration? = nil) async throws(HostError) -> CommandReturn {
        let driver = self.driver
        let token = driver.nextToken()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<CommandResult, Never>) in
                driver.post(.command(packet: packet, opcode: opcode, token: token, timeout: timeout?.nanoseconds, c))
            }
        } onCancel: {
            driver.post(.cancelCommand(token))
        }
        return try result.get()
    }

    /// Starts scanning and returns the events. Uses extended scanning when the controller
    /// supports it (``ControllerInfo/supportsExtendedScanning``) unless the configuration
    /// forces a mode. The stream ends with an error when scanning cannot start or the
    /// transport closes or fails; it ends without error after ``stopScan()`` or
    /// ``close()``. Cancelling the consuming task or dropping the stream stops scanning.
    /// A consumer that falls behind holds the host back from reading (see
    /// ``ScanEventStream``). One scan at a time.
    public func scan(_ config: ScanConfiguration) -> ScanEventStream {
        let id = scanIDs.wrappingAdd(1, ordering: .relaxed).oldValue
        let (stream, continuation) = AsyncThrowingStream<ScanEvent, any Error>.makeStream(
            bufferingPolicy: .bufferingNewest(ScanBacklog.capacity))
        let driver = self.driver
        continuation.onTermination = { termination in
            if case .cancelled = termination { driver.post(.scan(.stop(id: id, nil))) }
        }
        let backlog = ScanBacklog { [weak driver] in driver?.wake() }
        driver.post(.scan(.start(id: id, config, continuation, backlog)))
        var events = ScanEventStream(base: stream, backlog: backlog)
        events.scanID = id
        return events
    }

    /// Stops scan `id` (a stream's ``ScanEventStream/scanID``) only: a scan that could not
    /// start, or has ended, must not stop the one running.
    public func stopScan(id: UInt64) async {
        let driver = self.driver
        _ = await withCheckedContinuation { (c: CheckedContinuation<Result<Void, HostError>, Never>) in
            driver.post(.scan(.stop(id: id, c)))
        }
    }

    /// Stops the running scan (disables it in the controller) and ends its stream.
    public func stopScan() async throws(HostError) {
        let driver = self.driver
        let result = await withCheckedContinuation { (c: CheckedContinuation<Result<Void, HostError>, Never>) in
            driver.post(.scan(.stop(id: nil, c)))
        }
        try result.get()
    }

    /// Connects to `peer` as central (HCI_LE_Create_Connection, or HCI_LE_Extended_Create_Connection
    /// when the controller has it). One create runs at a time in the controller; further
    /// calls wait their turn (their timeout starts when their turn comes, so an absent
    /// device delays the others but does not fail them). After `timeout` the attempt is
    /// cancelled in the controller and this throws `.connectTimeout`; a controller refusal
    /// throws `.commandFailed`/`.connectFailed(status)`; cancelling the task throws `.cancelled`.
    /// Scanning may go on while connecting and connected.
    public func connect(to peer: LEAddress, timeout: Duration = .seconds(10),
                        parameters: LEConnectParameters = .default) async throws(HostError) -> LEConnection {
        let driver = self.driver
        let id = ConnectRequestID(rawValue: driver.nextToken().rawValue)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Result<LEConnection, HostError>, Never>) in
                driver.post(.link(.connect(id, peer, parameters, timeout: timeout.nanoseconds, c)))
            }
        } onCancel: {
            driver.post(.link(.cancelConnect(id)))
        }
        return try result.get()
    }

    /// What the controller offers for advertising: extended advertising sets (several at
    /// once, data up to its maximum) or legacy advertising only.
    public var advertisingCapabilities: AdvertisingCapabilities { AdvertisingCapabilities(info) }

    /// Starts advertising set ``AdvertisingConfiguration/advertisingSet`` as a peripheral
    /// and returns once the controller advertises. With extended advertising (Bluetooth 5
    /// controllers: LE Set Extended Advertising Parameters, Data, Scan Response Data, Enable;
    /// Core Vol 4 Part E §7.8.53–7.8.56) several sets run at once and data longer than 251
    /// bytes is sent in fragments; otherwise the legacy commands (§7.8.5–7.8.9) run one set.
    /// When a central connects the controller stops the set; the host restarts it until
    /// ``AdvertisingConfiguration/maximumConnections`` centrals are connected through it and
    /// again after one leaves. Starting a set again replaces its configuration. Links arrive
    /// on ``incomingConnections``.
    @discardableResult
    public func startAdvertising(_ configuration: AdvertisingConfiguration) async throws(HostError) -> AdvertisingSetInfo {
        try configuration.validate(for: advertisingCapabilities)
        let driver = self.driver
        let result = await withCheckedContinuation { (c: CheckedContinuation<Result<AdvertisingSetInfo, HostError>, Never>) in
            driver.post(.advertising(.start(configuration, c)))
        }
        return try result.get()
    }

    /// Stops advertising set `set`, or every set with nil; connected links stay up.
    public func stopAdvertising(set: UInt8? = nil) async {
        let driver = self.driver
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            driver.post(.advertising(.stop(set, c)))
        }
    }

    /// Every pairing's outcome on this host, the ones peers start included. One consumer,
    /// once: a consuming task that is cancelled ends the stream for good.
    public var pairingEvents: AsyncStream<PairingEvent> { driver.pairingEventStream }

    /// Links centrals opened to us (the peripheral role), each with its role, peer address
    /// and parameters, as they come up. Ends when the host closes. One consumer, once: a
    /// consuming task that is cancelled ends the stream for good (serve from one task for
    /// the host's life).
    public var incomingConnections: AsyncStream<LEConnection> { driver.incomingStream }

    /// Disables scanning if it runs, disconnects every link (their bearers close with reason
    /// nil), stops the driver and closes the transport.
    public func close() async {
        let driver = self.driver
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in driver.post(.close(c)) }
    }

    /// Why the host stopped (transport closed or failed, or closed by us), or nil while it runs.
    public var terminationReason: HostError? {
        driver.mailbox.withLock { m in m.stopped ? (m.terminalError ?? .hostClosed) : nil }
    }

    /// Waits until the host stops and returns why (as ``terminationReason``); nil when the
    /// waiting task is cancelled first. For a program that must end when its controller goes.
    public func terminated() async -> HostError? {
        let driver = self.driver
        let id: UInt64 = driver.mailbox.withLock { m in
            m.nextWaiter += 1
            return m.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<HostError?, Never>) in
                let now: HostError?? = driver.mailbox.withLock { m in
                    if m.stopped { return .some(m.terminalError ?? .hostClosed) }
                    if Task.isCancelled { return .some(nil) }
                    m.terminationWaiters[id] = c
                    return nil
                }
                if let now { c.resume(returning: now) }
            }
        } onCancel: {
            driver.mailbox.withLock { $0.terminationWaiters.removeValue(forKey: id) }?.resume(returning: nil)
        }
    }

    /// Where this host keeps bonds (``HostOptions/bondStore``); nil: nothing is stored.
    public var bondStore: BondStore? { driver.bondStore }

    /// Counters, updated by the driver after each batch of I/O.
    public var statistics: HostStatistics { driver.statistics }
}
