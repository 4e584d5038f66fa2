// The Magic 8-Ball SDK's central: find the 8-Ball (its 128-bit service), subscribe to the
// answer, write the question without response, print the answer.
//
//   MagicEightBallCentral [--transport SPEC] "Will it work?"
import BluetoothLE
import ExampleSupport

let eightBall = BluetoothUUID("8BA11000-1D7E-4D2E-9F3A-0B8BA1100000")!
let questionUUID = BluetoothUUID("8BA11001-1D7E-4D2E-9F3A-0B8BA1100000")!
let answerUUID = BluetoothUUID("8BA11002-1D7E-4D2E-9F3A-0B8BA1100000")!

let args = ExampleArguments()
do {
    guard let question = args.positional.first, !question.isEmpty else {
        throw BluetoothError(.invalidRequest, "ask a question: MagicEightBallCentral \"Will it work?\"")
    }
    let central = try await CentralManager(args.bluetooth)
    let ball = try await central.connect(try await central.find(ScanFilter(services: [eightBall])))
    let answers = try await ball.notifications(for: try await ball.characteristic(answerUUID, in: eightBall))
    try await ball.writeValue(Array(question.utf8), for: try await ball.characteristic(questionUUID, in: eightBall),
                              type: .withoutResponse)
    for try await answer in answers {
        say(String(decoding: answer, as: UTF8.self))
        break
    }
    await ball.disconnect()
    await central.close()
} catch {
    fail(error)
}
