import BluetoothHost
import BluetoothWire

/// The ATT fixed channel (CID 4) of an LE link run by our own host over HCI.
public final class HostATTBearer: ATTBearer {
    public let connection: LEConnection

    public init(connection: LEConnection) {
        self.connection = connection
    }

    public var maximumMTU: UInt16 { connection.maximumATTMTU }

    public func start(received: @escaping @Sendable (UnsafeRawBufferPointer) -> Void, closed: @escaping @Sendable (ATTBearerClosed) -> Void) {
        connection.startATT(received: received) { reason, message in
            closed(ATTBearerClosed(reason: reason, message: message))
        }
    }

    public func send(_ pdu: [UInt8]) throws(ATTBearerClosed) {
        do {
            try connection.sendATT(pdu)
        } catch {
            var reason: HCIErrorCode?
            if case .disconnected(let r) = error.kind { reason = r }
            throw ATTBearerClosed(reason: reason, message: error.message)
        }
    }

    public func close() {
        let connection = self.connection
        Task { await connection.disconnect() }
    }

    public var description: String { connection.description }
}
