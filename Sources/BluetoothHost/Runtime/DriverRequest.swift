import BluetoothSecurity
import BluetoothWire

/// Requests from the API to the driver thread, by the part of the driver that takes them:
/// the controller's own, then one family per runtime. A request the driver can no longer
/// take (it stopped) is refused: its caller is answered with why.
enum DriverRequest: @unchecked Sendable {
    case initialize(CheckedContinuation<Result<ControllerInfo, HostError>, Never>)
    case command(packet: [UInt8], opcode: HCIOpcode, token: CommandToken, timeout: UInt64?,
                 CheckedContinuation<CommandResult, Never>)
    case cancelCommand(CommandToken)
    case close(CheckedContinuation<Void, Never>?)
    case scan(ScanRequest)
    case link(LinkRequest)
    case security(SecurityRequest)
    case channel(ChannelRequest)
    case advertising(AdvertisingRequest)

    func refuse(_ error: HostError) {
        switch self {
        case .initialize(let c): c.resume(returning: .failure(error))
        case .command(_, _, _, _, let c): c.resume(returning: .failure(error))
        case .cancelCommand: break
        case .close(let c): c?.resume()
        case .scan(let r): r.refuse(error)
        case .link(let r): r.refuse(error)
        case .security(let r): r.refuse(error)
        case .channel(let r): r.refuse(error)
        case .advertising(let r): r.refuse(error)
        }
    }
}

/// For the ScanRuntime.
enum ScanRequest {
    case start(id: UInt64, ScanConfiguration, AsyncThrowingStream<ScanEvent, any Error>.Continuation, ScanBacklog)
    /// id nil: whatever scan runs (stopScan()); otherwise only that scan (stream ended).
    case stop(id: UInt64?, CheckedContinuation<Result<Void, HostError>, Never>?)

    func refuse(_ error: HostError) {
        switch self {
        case .start(_, _, let c, _): c.finish(throwing: error)
        case .stop(_, let c): c?.resume(returning: .success(()))
        }
    }
}

/// For the links: the connection manager, the links' ATT consumers and their ACL data.
enum LinkRequest {
    case connect(ConnectRequestID, LEAddress, LEConnectParameters, timeout: UInt64,
                 CheckedContinuation<Result<LEConnection, HostError>, Never>)
    case cancelConnect(ConnectRequestID)
    case disconnect(LEConnection, HCIErrorCode, CheckedContinuation<Void, Never>)
    case startATT(LEConnection, ATTRole, @Sendable (UnsafeRawBufferPointer) -> Void, @Sendable (HCIErrorCode?, String) -> Void)
    case sendACL(LEConnection, [UInt8])
    case updateParameters(LEConnection, L2CAPConnectionParameters, CheckedContinuation<Result<LELinkState, HostError>, Never>)
    case setPHY(LEConnection, tx: LEPHYSet, rx: LEPHYSet, LECodedPHYOptions, CheckedContinuation<Result<LELinkState, HostError>, Never>)
    case setDataLength(LEConnection, txOctets: UInt16, txTime: UInt16, CheckedContinuation<Result<LELinkState, HostError>, Never>)

    func refuse(_ error: HostError) {
        switch self {
        case .connect(_, _, _, _, let c): c.resume(returning: .failure(error))
        case .cancelConnect, .sendACL: break
        case .disconnect(let conn, _, let c):
            conn.markClosed(nil, HostError.disconnectMessage(nil))
            c.resume()
        case .updateParameters(_, _, let c), .setPHY(_, _, _, _, let c), .setDataLength(_, _, _, let c):
            c.resume(returning: .failure(error))
        case .startATT(let conn, _, _, let closed):
            conn.markClosed(nil, HostError.disconnectMessage(nil))
            let why = conn.closeInfo
            closed(why.reason, why.message)
        }
    }
}

/// For the SecurityRuntime.
enum SecurityRequest {
    /// What the user answered to a pairing's question.
    enum Answer {
        case passkey(UInt32?)
        case confirmed(Bool)
    }
    case pair(LEConnection, SMPConfiguration?, PairingAgent?, SecurityRuntime.PairingWaiter)
    case encrypt(LEConnection, Bond, SecurityRuntime.EncryptionWaiter)
    /// To the pairing of that generation only (a later one asks again).
    case answered(LEConnection, generation: Int, Answer)

    func refuse(_ error: HostError) {
        switch self {
        case .pair(_, _, _, let c): c.resume(returning: .failure(error))
        case .encrypt(_, _, let c): c.resume(returning: .failure(error))
        case .answered: break
        }
    }
}

/// For the CreditChannelRuntime.
enum ChannelRequest {
    case open(LEConnection, psm: UInt16, L2CAPChannelParameters, CreditChannelRuntime.Open)
    case send(L2CAPChannel, [UInt8], token: UInt64, CreditChannelRuntime.Send)
    /// The caller of send `token` left; the SDU stays queued.
    case sendCancelled(token: UInt64)
    /// The application took SDUs of that many K-frames: the peer gets the credits.
    case consumed(L2CAPChannel, frames: Int)
    case close(L2CAPChannel, CheckedContinuation<Void, Never>)
    case listen(psm: UInt16, L2CAPChannelParameters, L2CAPChannelSecurity, AsyncStream<L2CAPChannel>.Continuation)
    case stopListening(psm: UInt16)

    func refuse(_ error: HostError) {
        switch self {
        case .open(_, _, _, let c): c.resume(returning: .failure(error))
        case .send(_, _, _, let c): c.resume(returning: .failure(error))
        case .sendCancelled, .consumed, .stopListening: break
        case .close(_, let c): c.resume()
        case .listen(_, _, _, let c): c.finish()
        }
    }
}

/// For the AdvertisingRuntime.
enum AdvertisingRequest {
    case start(AdvertisingConfiguration, AdvertisingRuntime.Start)
    /// One set (nil: all).
    case stop(UInt8?, CheckedContinuation<Void, Never>)

    func refuse(_ error: HostError) {
        switch self {
        case .start(_, let c): c.resume(returning: .failure(error))
        case .stop(_, let c): c.resume()
        }
    }
}
