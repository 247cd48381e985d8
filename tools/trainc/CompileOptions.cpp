//===- CompileOptions.cpp - the flags of `trainc compile` -----------------===//
//
// The command line of `trainc compile`: the model, what to emit and
// report, the code generation flags and the training configuration (loss,
// optimizer). `trainc train` takes the same code generation and training
// flags, since it compiles the model it is given (TrainCommand.cpp).
//
//===----------------------------------------------------------------------===//
#include "tools/trainc/Commands.h"

#include <CLI/CLI.hpp>

namespace trainc::cli {

void addTrainingOptions(CLI::App &command, TrainingPipelineOptions &t) {
  auto *loss = command.add_option_group("Loss");
  loss->add_option("--loss", t.loss,
                   "auto (the model's scalar output if it has one, else "
                   "softmax-cross-entropy), softmax-cross-entropy, nll, mse, "
                   "l1, bce-with-logits or model")
      ->check(CLI::IsMember({"auto", "softmax-cross-entropy", "nll", "mse",
                             "l1", "bce-with-logits", "model"}))
      ->capture_default_str();
  loss->add_option("--reduction", t.reduction, "mean or sum")
      ->check(CLI::IsMember({"mean", "sum"}))
      ->capture_default_str();
  loss->add_option("--label-smoothing", t.labelSmoothing,
                   "Label smoothing of softmax-cross-entropy")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  loss->add_option("--ignore-index", t.ignoreIndex,
                   "Class label that contributes no loss")
      ->capture_default_str();
  loss->add_option("--output-weights", t.outputWeights,
                   "A model of several outputs: the weight of the loss on "
                   "each, comma-separated (the loss is their weighted sum, "
                   "against the same labels; 0 leaves an output out)")
      ->delimiter(',')
      ->check(nonNegative());

  auto *optimizer = command.add_option_group("Optimizer");
  optimizer
      ->add_option("--optimizer", t.optimizer, "sgd, adam, adamw or adagrad")
      ->check(CLI::IsMember({"sgd", "adam", "adamw", "adagrad"}))
      ->capture_default_str();
  optimizer
      ->add_option("--lr", t.learningRate,
                   "Learning rate (the runtime can change it per step)")
      ->check(positive())
      ->capture_default_str();
  optimizer->add_option("--momentum", t.momentum, "SGD momentum")
      ->check(nonNegative())
      ->capture_default_str();
  optimizer->add_option("--dampening", t.dampening, "SGD dampening")
      ->check(nonNegative())
      ->capture_default_str();
  optimizer->add_flag("--nesterov", t.nesterov, "SGD with Nesterov momentum");
  optimizer->add_option("--weight-decay", t.weightDecay,
                        "Weight decay (default: 0.01 for adamw, else 0)");
  optimizer->add_option("--beta1", t.beta1, "Adam/AdamW beta1")
      ->capture_default_str();
  optimizer->add_option("--beta2", t.beta2, "Adam/AdamW beta2")
      ->capture_default_str();
  optimizer->add_option("--epsilon", t.epsilon,
                        "Epsilon (default: 1e-8 for adam/adamw, 1e-10 for "
                        "adagrad)");
  optimizer->add_option("--lr-decay", t.lrDecay, "Adagrad learning-rate decay")
      ->check(nonNegative())
      ->capture_default_str();
  optimizer
      ->add_option("--clip-grad-norm", t.clipGradNorm,
                   "Clip gradients to this global L2 norm (0: off)")
      ->check(nonNegative())
      ->capture_default_str();
  optimizer
      ->add_option("--initial-loss-scale", t.initialLossScale,
                   "--amp fp16: the loss scale of the first step")
      ->check(positive())
      ->capture_default_str();
  optimizer
      ->add_option("--loss-scale-growth-interval", t.lossScaleGrowthInterval,
                   "--amp fp16: finite steps in a row after which the "
                   "loss scale doubles")
      ->check(positive())
      ->capture_default_str();
}

void addCodegenOptions(CLI::App &command, CompileCommandOptions &options) {
  command
      .add_option("--amp", options.amp,
                  "Automatic mixed precision: off, bf16, fp16 or "
                  "bf16-storage. Convolutions and products run in the low "
                  "precision where the target CPU has native instructions "
                  "for it (bf16: AVX512-BF16 or AMX; elsewhere the model "
                  "trains in f32); softmax, losses, normalization and the "
                  "optimizer stay f32, and so do the parameters (master "
                  "weights). bf16-storage, on any CPU: activations are "
                  "stored in bf16, products compute in f32")
      ->check(CLI::IsMember({"off", "bf16", "fp16", "bf16-storage"}))
      ->capture_default_str();
  command
      .add_option("--cpu", options.cpu,
                  "Target CPU: native (this machine) or an LLVM CPU name")
      ->capture_default_str();
  command.add_option("--dispatch", options.dispatch,
                     "KERNEL=BACKEND: run KERNEL (e.g. conv or graph.conv) on "
                     "BACKEND (reference, openblas); repeatable");
  command.add_flag("--tune", options.tune,
                   "Time each convolution and GEMM on every library that "
                   "can run it (oneDNN, OpenBLAS), on this machine, and run "
                   "it on the fastest; --dispatch still wins");
  command.add_flag("--relu-epilogues", options.reluEpilogues,
                   "Apply a ReLU after a oneDNN convolution or product as "
                   "its post-op: faster (5 % on the CNN), but oneDNN maps "
                   "NaN to 0 there, so a NaN in the data or the weights "
                   "no longer reaches the loss");
  command
      .add_option("--weight-layout", options.weightLayout,
                  "Convolution weights: dense (ONNX's layout) or library "
                  "(kept in oneDNN's blocked layout when only oneDNN "
                  "convolutions and the optimizer touch them: no reorder "
                  "per step; users still see the dense layout)")
      ->check(CLI::IsMember({"dense", "library"}))
      ->capture_default_str();
  command
      .add_option("--schedule", options.schedule,
                  "Launch order: memory (reordered where that lowers the "
                  "arena's peak; nothing is recomputed) or graph (the order "
                  "autodiff emits)")
      ->check(CLI::IsMember({"memory", "graph"}))
      ->capture_default_str();
  command.add_flag("--check-numerics", options.checkNumerics,
                   "Test the data, the weights and every kernel's outputs "
                   "for NaN and infinities while the library runs; a step "
                   "that makes one fails, naming the kernel (or the input) "
                   "where it started. For debugging: one more pass over "
                   "each kernel's outputs");
  command.add_option("--tune-cache", options.tuneCache,
                     "The file --tune keeps its times in (default: "
                     "$XDG_CACHE_HOME/trainc/dispatch-times.json or "
                     "~/.cache/trainc/dispatch-times.json)");
  command.add_option("--memory-budget", options.memoryBudget,
                     "BYTES or N%: recompute values of the forward pass in "
                     "the backward one (--trainc-remat) until the planned "
                     "arena of a training step is at most BYTES, or N% of "
                     "the arena without recomputation; an error, before "
                     "anything is written, if it cannot be met");
  command
      .add_option("--remat-solver", options.rematSolver,
                  "How --memory-budget chooses what to recompute: greedy "
                  "(most bytes freed per flop first), ilp (an integer "
                  "program solved by CBC: the fewest recomputed flops in "
                  "its model) or best (both; the plan that meets the "
                  "budget with fewer flops)")
      ->check(CLI::IsMember({"greedy", "ilp", "best"}))
      ->capture_default_str();
  command
      .add_option("--target", options.target,
                  "cpu, or cuda: the step runs on an NVIDIA GPU (products "
                  "on cuBLAS, every other kernel generated and compiled "
                  "for --gpu-arch; the library needs the CUDA driver and "
                  "cuBLAS where it runs)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  command
      .add_option("--gpu-arch", options.gpuArchs,
                  "--target cuda: GPU architectures to compile for, "
                  "comma-separated (sm_75 ... sm_121; one fatbin each, the "
                  "session loads the newest its GPU runs)")
      ->delimiter(',')
      ->check(CLI::Validator(
          [](std::string &arch) -> std::string {
            int number = 0;
            if (arch.rfind("sm_", 0) != 0 ||
                arch.find_first_not_of("0123456789a", 3) != std::string::npos ||
                (number = std::atoi(arch.c_str() + 3)) < 75 || number > 121)
              return "not a GPU architecture ptxas accepts (sm_75 ... "
                     "sm_121, e.g. sm_80, sm_90): '" +
                     arch + "'";
            return "";
          },
          "ARCH"))
      ->capture_default_str();
  command
      .add_option("--cuda-path", options.cudaPath,
                  "--target cuda: the CUDA toolkit (ptxas, fatbinary, "
                  "libdevice)")
      ->capture_default_str();
  command.add_flag("--data-parallel", options.training.dataParallel,
                   "Data-parallel training: each step averages every "
                   "gradient over the processes of the MPI job it runs in "
                   "(mpirun -np N), in buckets overlapped with the backward "
                   "pass. The library links Open MPI; in a single process "
                   "(no mpirun) it trains alone");
  command
      .add_option("--bucket-mib", options.bucketMiB,
                  "--data-parallel: MiB of gradients per all-reduce bucket")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command.add_option("--runtime-library", options.runtimeLibrary,
                     "The runtime archive to link (default: "
                     "libtrainc_rt.a in the library directory of trainc's "
                     "prefix)");
}

void addCompileCommand(CLI::App &command, CompileCommandOptions &options) {
  addModelOptions(command, options.model);
  TrainingPipelineOptions &t = options.training;
  command.add_option("-o,--output", options.output,
                     "Where to write the result (default: libNAME.so for "
                     "--emit=so, stdout for IR)");
  command
      .add_option("--emit", options.emit,
                  "What to produce: so (the model library, with NAME.h "
                  "and NAME.json beside it), graph (the imported @forward),"
                  " train-graph (@gradients, @train_step, @eval) or kernel "
                  "(launches with backends and arena offsets) or ptx "
                  "(--target cuda: the generated kernels for the first "
                  "--gpu-arch)")
      ->check(CLI::IsMember({"so", "graph", "train-graph", "kernel", "ptx"}))
      ->capture_default_str();
  command.add_flag("--print-locations", options.printLocations,
                   "Print each op's location (its ONNX node name)");
  command.add_flag("--stats", options.stats,
                   "Print the arena size, persistent bytes, and each "
                   "kernel's backend and estimated flops and bytes");
  command.add_flag("--timing", options.timing,
                   "Print where the compile's time goes, on stderr: the "
                   "import, each MLIR pass, LLVM's optimization and code "
                   "generation, and the link (wall-clock seconds)");
  command
      .add_option(
          "--compile-threads", options.compileThreads,
          "Threads that compile the generated kernels (0: every "
          "hardware thread); the library computes the same for any count")
      ->capture_default_str();
  command.add_flag("--profile", options.profile,
                   "Also train a copy of the library with a timer around "
                   "every kernel on random data, and print time per kernel");
  command
      .add_option("--profile-steps", options.profileSteps,
                  "Steps --profile measures (after 3 warm-up steps)")
      ->check(positive())
      ->capture_default_str();
  command
      .add_option("--profile-launches", options.profileLaunches,
                  "Slowest launches --profile lists (0: all)")
      ->check(nonNegative())
      ->capture_default_str();
  command
      .add_option("--profile-threads", options.profileThreads,
                  "Threads of the --profile run (0: all cores)")
      ->check(nonNegative())
      ->capture_default_str();
  addCodegenOptions(command, options);
  addTrainingOptions(command, t);
}

} // namespace trainc::cli
