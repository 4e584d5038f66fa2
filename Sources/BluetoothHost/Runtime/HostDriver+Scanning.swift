import BluetoothTransport
import BluetoothWire
import Glibc
import Synchronization

// Scanning on the driver thread: requests go to the ScanRuntime, its enable and disable
// commands to the controller (counted while in flight: close waits for them).
extension HostDriver {
    func handle(_ request: ScanRequest) {
        switch request {
        case .start(let id, let config, let continuation, let backlog):
            startScan(id: id, config, continuation, backlog: backlog)
        case .stop(let id, let c):
            guard scanning.isRunning(id) else {
                c?.resume(returning: .success(()))
                return
            }
            stopScan(continuation: c)
        }
    }

    func startScan(id: UInt64, _ config: ScanConfiguration,
                   _ continuation: AsyncThrowingStream<ScanEvent, any Error>.Continuation, backlog: ScanBacklog) {
        guard !closing, let info else {
            continuation.finish(throwing: HostError.hostClosed)
            return
        }
        let extended = config.useExtendedScanning ?? info.supportsExtendedScanning
        for command in scanning.start(id: id, config, extended: extended, continuation, backlog: backlog) {
            if let error = submit(command, waiter: .scanEnable(id: id)) {
                _ = scanning.stop(error)
                return
            }
        }
    }

    func stopScan(continuation: CheckedContinuation<Result<Void, HostError>, Never>?) {
        guard scanning.isRunning(nil) else {
            continuation?.resume(returning: .success(()))
            return
        }
        disable(scanning.stop(), continuation: continuation)
    }

    func scanEnableAnswered(id: UInt64, _ result: CommandResult) {
        disable(scanning.enableAnswered(id: id, result), continuation: nil)
    }

    /// Sends a scan's disable commands; `continuation` (if any) waits for the first one.
    private func disable(_ commands: [any HCICommandEncodable], continuation: CheckedContinuation<Result<Void, HostError>, Never>?) {
        if commands.isEmpty { continuation?.resume(returning: .success(())) }
        var first = true
        for command in commands {
            disabling += 1
            if let error = submit(command, waiter: .scanDisable(continuation: first ? continuation : nil)) {
                disabling -= 1
                if first { continuation?.resume(returning: .failure(error)) }
            }
            first = false
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
        guard let backlog = scanning.backlog else { return false }  // the field only: no copy of the scanner
        guard transport.holdsUnreadData, !closing, flow.isIdle, disabling == 0, links.awaitsNoConnection,
              links.isEmpty, !advertising.awaitsEvents,
              !hasPending else {
            if readingPaused { backlog.release() }
            return false
        }
        return backlog.holdReading(wasPaused: readingPaused)
    }
}
