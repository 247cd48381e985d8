# lit configuration shared by test/lit and test/models.
import os
import lit.formats

site = lit_config.params.get("trainc_site_config")
if not site:
    lit_config.fatal("run through ctest, or pass --param trainc_site_config=BUILD/test/lit.site.cfg.py")
exec(open(site).read())

config.name = "trainc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["lit.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
# Temporary files go to the build tree, never the sources.
config.test_exec_root = os.path.join(
    config.trainc_binary_dir, "test", os.path.basename(config.test_source_root))

config.environment["PATH"] = os.pathsep.join(
    [config.trainc_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
config.substitutions.append(("%models", os.path.join(config.trainc_source_dir, "models")))
config.substitutions.append(("%generated_models", os.path.join(config.trainc_binary_dir, "models")))
config.substitutions.append(("%python", config.python))
# The CUDA target's tests compile with the toolkit (ptxas, fatbinary,
# libdevice), passed explicitly; no GPU is needed.
config.substitutions.append(("%cuda", config.cuda_path))
if os.path.exists(os.path.join(config.cuda_path, "bin", "ptxas")):
    config.available_features.add("cuda-toolkit")
