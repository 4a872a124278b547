"""Harmless look-alikes of the malicious-package behaviour families (:mod:`.malware`), as new-package diffs.

Each is what ordinary packages do with the same means: a native build or a thank-you message in a
lifecycle hook, a prebuilt binary fetched from the project's release page and checked against a
pinned digest, opt-in telemetry, a reader of the package's own client configuration, git helpers,
HTTP client code, an AI agent CLI run with its checks on, a release workflow that hands its token to
the publish step. Written as data, never executed.
"""

from __future__ import annotations

from worker.training.corpus.package_parts import Draw, Files, package_json


def npm_harmless(d: Draw, kind: str) -> Files:
    if kind == "native-build":
        return [("package.json", package_json(d, {"install": d.pick(("node-gyp rebuild", "prebuild-install || node-gyp rebuild"))})),
                ("binding.gyp", '{"targets": [{"target_name": "addon", "sources": ["src/addon.cc"]}]}')]  # fmt: skip
    if kind == "thank-you":
        return [
            ("package.json", package_json(d, {"postinstall": "node scripts/postinstall.js"})),
            (
                "scripts/postinstall.js",
                d.pick(
                    (
                        "if (!process.env.CI) {\n  console.log('Thank you for installing "
                        + d.pkg
                        + "! Docs: https://"
                        + d.dist
                        + ".dev');\n}",
                        "const env = process.env;\nif (env.npm_config_loglevel !== 'silent' && !env.CI) {\n  console.log('\\u001b[96mLove "
                        + d.pkg
                        + "? Support it on Open Collective.\\u001b[0m');\n}",
                    )
                ),
            ),  # fmt: skip
        ]
    if kind == "prebuilt-binary":
        digest = d.rng.randbytes(32).hex()
        version = d.pick(("1.4.2", "0.19.3", "3.0.1"))
        project = d.dist
        code = (
            "const crypto = require('crypto');\nconst fs = require('fs');\nconst path = require('path');\n"
            "const https = require('https');\nconst {execFileSync} = require('child_process');\n"
            f"const VERSION = '{version}';\nconst SHA256 = {{'linux-x64': '{digest}'}};\n"
            "const target = `${process.platform}-${process.arch}`;\n"
            f"const url = `https://github.com/{project}/{project}/releases/download/v${{VERSION}}/{project}-${{target}}.tar.gz`;\n"
            "https.get(url, (res) => {\n  const chunks = [];\n  res.on('data', (c) => chunks.push(c));\n"
            "  res.on('end', () => {\n    const data = Buffer.concat(chunks);\n"
            "    const sum = crypto.createHash('sha256').update(data).digest('hex');\n"
            "    if (sum !== SHA256[target]) throw new Error(`checksum mismatch for ${target}`);\n"
            "    const bin = path.join(__dirname, 'bin');\n    fs.mkdirSync(bin, {recursive: true});\n"
            "    execFileSync('tar', ['xzf', '-', '-C', bin], {input: data});\n"
            f"    execFileSync(path.join(bin, '{project}'), ['--version']);\n  }});\n}});"
        )
        return [("package.json", package_json(d, {"postinstall": "node install.js"})), ("install.js", code)]
    if kind == "telemetry-opt-in":
        code = (
            "const https = require('https');\nconst os = require('os');\n\n"
            "function enabled() {\n  const env = process.env;\n"
            "  return env.MYTOOL_TELEMETRY === '1' && !env.DO_NOT_TRACK && !env.CI;\n}\n\n"
            "function track(event) {\n  if (!enabled()) return;\n"
            "  const body = JSON.stringify({event, version: require('./package.json').version, platform: os.platform()});\n"
            f"  const req = https.request('https://telemetry.{d.dist}.dev/v1/events', {{method: 'POST'}});\n"
            "  req.on('error', () => {});\n  req.end(body);\n}\n\nmodule.exports = {track};"
        )
        return [("package.json", package_json(d, {"test": "node test.js"})), ("lib/telemetry.js", code)]
    if kind == "config-reader":
        code = (
            "const fs = require('fs');\nconst os = require('os');\nconst path = require('path');\n\n"
            "function loadConfig(profile = 'default') {\n"
            "  const file = process.env.AWS_SHARED_CREDENTIALS_FILE || path.join(os.homedir(), '.aws', 'credentials');\n"
            "  if (!fs.existsSync(file)) return {};\n  const out = {};\n  let section = null;\n"
            "  for (const line of fs.readFileSync(file, 'utf8').split(/\\r?\\n/)) {\n"
            "    const header = line.match(/^\\[(.+)\\]$/);\n    if (header) { section = header[1]; continue; }\n"
            "    const kv = line.match(/^\\s*([\\w_]+)\\s*=\\s*(.*)$/);\n"
            "    if (kv && section === profile) out[kv[1]] = kv[2];\n  }\n  return out;\n}\n\nmodule.exports = {loadConfig};"
        )
        return [("package.json", package_json(d, {"test": "jest"})), ("src/credentials.js", code)]
    if kind == "git-helper":
        code = (
            "const {execFileSync} = require('child_process');\n\n"
            "function currentBranch(cwd = process.cwd()) {\n"
            "  return execFileSync('git', ['rev-parse', '--abbrev-ref', 'HEAD'], {cwd, encoding: 'utf8'}).trim();\n}\n\n"
            "function changedFiles(base = 'main') {\n"
            "  return execFileSync('git', ['diff', '--name-only', base], {encoding: 'utf8'}).split('\\n').filter(Boolean);\n}\n\n"
            "module.exports = {currentBranch, changedFiles};"
        )
        return [("package.json", package_json(d, {"test": "node --test"})), ("lib/git.js", code)]
    if kind == "http-client":
        code = (
            "const https = require('https');\n\n"
            "function request(url, {method = 'GET', headers = {}, body} = {}) {\n"
            "  return new Promise((resolve, reject) => {\n"
            "    const req = https.request(url, {method, headers}, (res) => {\n"
            "      let data = '';\n      res.on('data', (c) => (data += c));\n"
            "      res.on('end', () => resolve({status: res.statusCode, body: data}));\n    });\n"
            "    req.on('error', reject);\n    if (body) req.write(typeof body === 'string' ? body : JSON.stringify(body));\n"
            "    req.end();\n  });\n}\n\nmodule.exports = {request};"
        )
        return [("package.json", package_json(d, {"test": "mocha"})), ("index.js", code)]
    # agent-cli-safe: an agent CLI run with its checks on, on the project's own task
    code = (
        "const {spawnSync} = require('child_process');\n\n"
        "// Ask the local coding agent to summarise the changes; it asks before any tool runs.\n"
        "function summarise(diffFile) {\n"
        f"  return spawnSync('{d.pick(('claude', 'gemini', 'codex'))}', ['-p', `Summarise the changes in ${{diffFile}} for the changelog`], {{encoding: 'utf8'}}).stdout;\n}}\n\n"
        "module.exports = {summarise};"
    )
    return [
        ("package.json", package_json(d, {"changelog": "node scripts/changelog.js"})),
        ("scripts/changelog.js", code),
    ]


def pypi_harmless(d: Draw, kind: str) -> Files:
    name = d.module
    if kind in ("native-build", "thank-you", "prebuilt-binary"):
        setup = (
            "from setuptools import Extension, setup\nfrom setuptools.command.build_ext import build_ext\n\n\n"
            "class BuildExt(build_ext):\n    def build_extensions(self):\n"
            "        if self.compiler.compiler_type == 'unix':\n"
            "            for ext in self.extensions:\n                ext.extra_compile_args = ['-O3']\n"
            "        super().build_extensions()\n\n\n"
            f"setup(\n    name='{d.dist}',\n    ext_modules=[Extension('{name}._speedups', ['src/speedups.c'])],\n"
            "    cmdclass={'build_ext': BuildExt},\n)"
        )
        return [("setup.py", setup)]
    if kind == "telemetry-opt-in":
        code = (
            "import json\nimport os\nimport platform\nimport urllib.request\n\n\n"
            "def enabled() -> bool:\n    return os.environ.get('MYTOOL_TELEMETRY') == '1' and 'DO_NOT_TRACK' not in os.environ\n\n\n"
            "def track(event: str) -> None:\n    if not enabled():\n        return\n"
            "    body = json.dumps({'event': event, 'python': platform.python_version()}).encode()\n"
            f"    request = urllib.request.Request('https://telemetry.{name}.dev/v1/events', data=body, method='POST')\n"
            "    try:\n        urllib.request.urlopen(request, timeout=2)\n    except OSError:\n        pass"
        )
        return [(f"{name}/telemetry.py", code)]
    if kind == "config-reader":
        code = (
            "import configparser\nimport os\n\n\n"
            "def load_credentials(profile: str = 'default') -> dict[str, str]:\n"
            "    path = os.environ.get('AWS_SHARED_CREDENTIALS_FILE', os.path.expanduser('~/.aws/credentials'))\n"
            "    parser = configparser.ConfigParser()\n    parser.read(path)\n"
            "    return dict(parser[profile]) if parser.has_section(profile) else {}"
        )
        return [(f"{name}/config.py", code)]
    if kind == "git-helper":
        code = (
            "import subprocess\n\n\n"
            "def current_branch(cwd: str = '.') -> str:\n"
            "    return subprocess.run(['git', 'rev-parse', '--abbrev-ref', 'HEAD'], cwd=cwd, capture_output=True,\n"
            "                          text=True, check=True).stdout.strip()"
        )
        return [(f"{name}/vcs.py", code)]
    if kind == "http-client":
        code = (
            "import requests\n\n\nclass Client:\n    def __init__(self, base_url: str, token: str | None = None):\n"
            "        self.session = requests.Session()\n        self.base_url = base_url.rstrip('/')\n"
            "        if token:\n            self.session.headers['Authorization'] = f'Bearer {token}'\n\n"
            "    def get(self, path: str, **params):\n"
            "        response = self.session.get(f'{self.base_url}/{path}', params=params, timeout=30)\n"
            "        response.raise_for_status()\n        return response.json()"
        )
        return [(f"{name}/client.py", code)]
    code = (
        "import subprocess\n\n\n# Ask the local coding agent for a changelog entry; it asks before any tool runs.\n"
        "def summarise(diff_file: str) -> str:\n"
        f"    return subprocess.run(['{d.pick(('claude', 'gemini', 'codex'))}', '-p', f'Summarise the changes in {{diff_file}}'],\n"
        "                          capture_output=True, text=True).stdout"
    )
    return [(f"{name}/changelog.py", code)]


def ci_publish(d: Draw) -> Files:
    """A release workflow that hands its registry token to the publish step, as registries document."""
    registry = d.pick(("npm", "pypi"))
    step = (
        "      - run: npm ci && npm test\n      - run: npm publish --provenance\n        env:\n"
        "          NODE_AUTH_TOKEN: ${{ secrets.NPM_TOKEN }}\n"
        if registry == "npm"
        else "      - run: python -m build\n      - uses: pypa/gh-action-pypi-publish@release/v1\n"
        "        with:\n          password: ${{ secrets.PYPI_API_TOKEN }}\n"
    )
    workflow = (
        "name: release\non:\n  release:\n    types: [published]\npermissions:\n  contents: read\n  id-token: write\n"
        "jobs:\n  publish:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n"
        + step
    )
    return [(".github/workflows/release.yml", workflow)]


LOOK_ALIKES = (
    "native-build", "thank-you", "prebuilt-binary", "telemetry-opt-in", "config-reader", "git-helper",
    "http-client", "agent-cli-safe",
)  # fmt: skip
