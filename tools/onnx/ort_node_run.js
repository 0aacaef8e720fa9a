// Runs an ONNX model once with onnxruntime-node on one execution provider and prints the process's
// peak resident memory (the VmHWM line of /proc/self/status) on stderr: memory_compare.py's peer
// for wgml's webgpu device (onnxruntime's WebGPU EP, on lavapipe where there is no GPU).
//   node ort_node_run.js NODE_MODULES MODEL PROVIDER [NAME=FILE.npy ...]
const fs = require("fs");
const path = require("path");

const [modules, model, provider, ...inputs] = process.argv.slice(2);
const ort = require(path.join(modules, "onnxruntime-node"));

const NPY_TYPES = {"<f4": ["float32", Float32Array], "<i8": ["int64", BigInt64Array], "<i4": ["int32", Int32Array]};

// A little-endian .npy file (format 1.0, C order) as an ort.Tensor.
function readNpy(file) {
  const bytes = fs.readFileSync(file);
  const headerLength = bytes.readUInt16LE(8);
  const header = bytes.toString("latin1", 10, 10 + headerLength);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (!(descr in NPY_TYPES) || /'fortran_order':\s*True/.test(header)) throw new Error(`${file}: unsupported .npy ${header}`);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(",").filter((d) => d.trim()).map(Number);
  const [type, View] = NPY_TYPES[descr];
  const data = new Uint8Array(bytes.subarray(10 + headerLength));  // copied: aligned for the typed view
  return new ort.Tensor(type, new View(data.buffer, 0, data.byteLength / View.BYTES_PER_ELEMENT), shape);
}

(async () => {
  const feeds = {};
  for (const input of inputs) {
    const at = input.indexOf("=");
    feeds[input.slice(0, at)] = readNpy(input.slice(at + 1));
  }
  const session = await ort.InferenceSession.create(model, {executionProviders: [provider]});
  await session.run(feeds);
  const status = fs.readFileSync("/proc/self/status", "utf8");
  console.error(status.split("\n").find((line) => line.startsWith("VmHWM:")));
})().catch((error) => {
  console.error(error.message);
  process.exit(1);
});
