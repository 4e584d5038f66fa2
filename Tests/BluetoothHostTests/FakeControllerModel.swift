@testable import BluetoothHost
import BluetoothWire
import FakeController

/// Runs the initializer against `model` without I/O; returns the result and the opcodes sent.
func runInit(_ model: FakeControllerModel) -> (Result<ControllerInfo, HostError>, [HCIOpcode]) {
    var machine = ControllerInitializer()
    var action = machine.start()
    var sent: [HCIOpcode] = []
    while true {
        switch action {
        case .finished(let info): return (.success(info), sent)
        case .failed(let e): return (.failure(e), sent)
        case .send(let command):
            sent.append(command.opcode)
            let result: Result<CommandReturn, HostError>
            if let params = model.returnParameters(for: command.opcode) {
                // Go through the real flow so status handling is the production one.
                var flow = HCICommandFlow()
                _ = flow.submit(command.packet, opcode: command.opcode, token: CommandToken(rawValue: 1), now: 0)
                let actions = withEvent(commandComplete(command.opcode, params)) { flow.handleEvent($0, now: 1) }
                result = actions.completions.first?.1 ?? .failure(HostError(.cancelled, "no completion"))
            } else {
                result = .failure(.commandTimeout(command.opcode, after: 2 * second))
            }
            action = machine.handle(result)
        }
    }
}
