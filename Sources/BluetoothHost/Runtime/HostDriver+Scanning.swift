import BluetoothTransport
import BluetoothWire
import Glibc
import Synchronization

// Scanning on the driver thread: the Scanner state machine, its enable/disable commands and
// the event stream (bounded; what it drops is counted).
extension HostDriver {
    // MARK: Scanning

    func startScan(id: UInt64, _ config: ScanConfiguration,
                   _ continuation: AsyncThrowingStream<ScanEvent, any Error>.Continuation, backlog: ScanBacklog) {
        if scan != nil {
            continuation.finish(throwing: HostError(.notSupported, "a scan is already running on this host; stop it before starting another"))
            return
        }
        guard !closing, let info else {
            continuation.finish(throwing: HostError.hostClosed)
            return
        }
        let extended = config.useExtendedScanning ?? info.supportsExtendedScanning
        let scanner = Scanner(configuration: config, extended: extended)
        let commands = scanner.enableCommands()
        scan = ActiveScan(id: id, scanner: scanner, continuation: continuation, backlog: backlog, enabling: commands.count)
        for command in commands {
            if let error = submit(command, waiter: .scanEnable(id: id)) {
                scan = nil
                continuation.finish(throwing: error)
                return
            }
        }
    }

    func stopScan(continuation: CheckedContinuation<Result<Void, HostError>, Never>?) {
        guard let s = scan else {
            continuation?.resume(returning: .success(()))
            return
        }
        scan = nil
        s.continuation.finish()
        var first = true
        for command in s.scanner.disableCommands() {
            disabling += 1
            if let error = submit(command, waiter: .scanDisable(continuation: first ? continuation : nil)) {
                disabling -= 1
                if first { continuation?.resume(returning: .failure(error)) }
            }
            first = false
        }
    }

    func scanEnableAnswered(id: UInt64, _ result: CommandResult) {
        guard let s = scan, s.id == id else { return }
        switch result {
        case .success:
            scan?.enabling -= 1
        case .failure(var error):
            error.message = "cannot start scanning: " + error.message
            scan = nil
            s.continuation.finish(throwing: error)
            // Make sure the controller is not left half-enabled.
            for command in s.scanner.disableCommands() {
                disabling += 1
                if submit(command, waiter: .scanDisable(continuation: nil)) != nil { disabling -= 1 }
            }
        }
    }

    /// Back-pressure: whether to leave the transport unread because the scan's consumer is
    /// behind (``ScanEventStream``). Only on a transport that holds unread data without
    /// loss, and only while nothing else waits on the controller: a command in flight, a
    /// connection attempt, a link (its ACL data), connectable advertising (a central may
    /// connect), advertising being started or stopped, a close. Those need the events
    /// behind the reports, and a consumer awaiting one of them inside its scan loop would
    /// otherwise never drain. Nor with bytes waiting to be written (the descriptor is
    /// polled for them).
    func shouldPauseReading() -> Bool {
        guard let backlog = scan?.backlog else { return false }  // the field only: no copy of the scanner
        guard transport.holdsUnreadData, !closing, flow.isIdle, disabling == 0, connectWaiters.isEmpty,
              links.isEmpty, !advertising.awaitsEvents,
              !hasPending else {
            if readingPaused { backlog.release() }
            return false
        }
        return backlog.holdReading(wasPaused: readingPaused)
    }
}
