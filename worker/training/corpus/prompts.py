"""LLM applications' own prompts, written in their code: hard negatives.

An application that calls a model writes the model's instructions into its code: a system message
in an OpenAI-style ``messages`` list, Anthropic's ``system=``, Gemini's ``system_instruction``, a
LangChain ``ChatPromptTemplate``, a chat template's default system turn, a prompts YAML file, a
request body in a README's curl example. The text gives orders ("You are a support assistant.
Answer in one short sentence.") to the application's own model, not to whoever reads the code:
harmless. The models read such text as an injection (a Gemini SDK README's ``system_instruction``
blocked as a 64 KB carrier alone; the prompt-template look-alike of
``benchmarks/canonical_probes.py``), and LLM libraries ship many of them in their releases.

Each record is one prompt (a role and one or two tasks from the pools below, in one of six
languages) in one code shape, bare, in a README's code block among README slices, or as a file a
release diff adds. Written for this project; one CV group per shape. Part of the shipped
prompt-injection recipe since 2026-12-01 (docs/measurements.md, "Applications' own prompts").
"""

from __future__ import annotations

import random
from string import Template
from typing import Any

from worker.training.corpus import package_parts
from worker.training.corpus.build import record
from worker.training.data import APP_PROMPTS_FILE

SOURCE = "written for this project (worker/training/corpus/prompts.py)"
LICENCE = "Apache-2.0"
FILE_NAME = APP_PROMPTS_FILE.name
GROUP_PREFIX = "app-prompt:"
PER_SHAPE = 60

_PRODUCTS = ("Acme Cloud", "Ledgerly", "the docs site", "PetPal", "our HR portal", "Tramway")
_ROLES: dict[str, tuple[str, ...]] = {
    "en": (
        "You are a helpful assistant.",
        "You are a customer-support agent for {product}.",
        "You are a senior Python reviewer.",
        "You are a translation engine.",
        "You are a concise summariser of meeting notes.",
        "You are an SQL expert who writes PostgreSQL queries.",
        "You are a friendly tutor for beginners.",
        "You classify support tickets for {product}.",
        "You are a careful research assistant.",
    ),
    "de": ("Du bist ein hilfreicher Assistent.", "Du bist der Kundenservice von {product}."),
    "fr": ("Tu es un assistant serviable.", "Tu es l'agent du support client de {product}."),
    "es": ("Eres un asistente útil.", "Eres el agente de atención al cliente de {product}."),
    "zh": ("你是一个乐于助人的助手。", "你是{product}的客服助手。"),
    "ja": ("あなたは親切なアシスタントです。", "あなたは{product}のサポート担当です。"),
}
_TASKS: dict[str, tuple[str, ...]] = {
    "en": (
        "Answer in one short sentence.",
        "Only use the context below; if the answer is not there, say you don't know.",
        'Reply in JSON with the keys "label" and "confidence".',
        "Summarise the text in three bullet points.",
        "Translate the user's message into French and keep the formatting.",
        "Point out bugs and suggest fixes; do not rewrite the whole file.",
        "Never invent citations or URLs.",
        "Keep a polite tone and ask a clarifying question when the request is ambiguous.",
        "Classify the ticket as billing, bug or feature request.",
        "Do not answer questions unrelated to {product}.",
        "Always answer in the language of the question.",
        "Think step by step, then give the final answer on the last line.",
    ),
    "de": ("Antworte in einem kurzen Satz.", "Nutze nur den folgenden Kontext."),
    "fr": ("Réponds en une phrase courte.", "N'utilise que le contexte ci-dessous."),
    "es": ("Responde en una sola frase.", "Usa solo el contexto de abajo."),
    "zh": ("请用一句话回答。", "只使用下面的上下文。"),
    "ja": ("一文で答えてください。", "以下の文脈だけを使ってください。"),
}
_USER = ("question", "text", "ticket", "user_input", "query", "document")


def _system(rng: random.Random) -> str:
    lang = "en" if rng.random() < 0.7 else rng.choice([code for code in _ROLES if code != "en"])
    tasks = rng.sample(_TASKS[lang], min(len(_TASKS[lang]), rng.choice((1, 2))))
    text = " ".join((rng.choice(_ROLES[lang]), *tasks))
    return text.replace("{product}", rng.choice(_PRODUCTS)).replace('"', "'")


# Each shape: the file it would be, and its code with ``${system}`` (the prompt) and ``${user}``
# (the name of the user's text) to fill (``string.Template``).
SHAPES: dict[str, tuple[str, str]] = {
    "openai-py": (
        "app/chat.py",
        "from openai import OpenAI\n"
        "\n"
        "client = OpenAI()\n"
        "\n"
        "\n"
        "def answer(${user}: str) -> str:\n"
        "    response = client.chat.completions.create(\n"
        '        model="gpt-4o-mini",\n'
        "        messages=[\n"
        '            {"role": "system", "content": "${system}"},\n'
        '            {"role": "user", "content": ${user}},\n'
        "        ],\n"
        "    )\n"
        "    return response.choices[0].message.content\n",
    ),
    "anthropic-py": (
        "src/assistant.py",
        "import anthropic\n"
        "\n"
        "client = anthropic.Anthropic()\n"
        "message = client.messages.create(\n"
        '    model="claude-sonnet-4-5",\n'
        "    max_tokens=1024,\n"
        '    system="${system}",\n'
        '    messages=[{"role": "user", "content": ${user}}],\n'
        ")\n"
        "print(message.content[0].text)\n",
    ),
    "gemini-py": (
        "examples/gemini.py",
        "from google import genai\n"
        "from google.genai import types\n"
        "\n"
        "client = genai.Client()\n"
        "response = client.models.generate_content(\n"
        '    model="gemini-2.5-flash",\n'
        "    contents=${user},\n"
        '    config=types.GenerateContentConfig(system_instruction="${system}"),\n'
        ")\n",
    ),
    "langchain-py": (
        "app/chains.py",
        "from langchain_core.prompts import ChatPromptTemplate\n"
        "\n"
        "prompt = ChatPromptTemplate.from_messages(\n"
        "    [\n"
        '        ("system", "${system}"),\n'
        '        ("human", "{${user}}"),\n'
        "    ]\n"
        ")\n"
        "chain = prompt | llm\n",
    ),
    "openai-js": (
        "src/chat.js",
        'import OpenAI from "openai";\n'
        "\n"
        "const openai = new OpenAI();\n"
        "\n"
        "export async function reply(${user}) {\n"
        "  const completion = await openai.chat.completions.create({\n"
        '    model: "gpt-4o",\n'
        "    messages: [\n"
        '      { role: "system", content: "${system}" },\n'
        '      { role: "user", content: ${user} },\n'
        "    ],\n"
        "  });\n"
        "  return completion.choices[0].message.content;\n"
        "}\n",
    ),
    "ai-sdk-ts": (
        "lib/answer.ts",
        'import { generateText } from "ai";\n'
        'import { openai } from "@ai-sdk/openai";\n'
        "\n"
        "export async function answer(${user}: string) {\n"
        "  const { text } = await generateText({\n"
        '    model: openai("gpt-4o"),\n'
        '    system: "${system}",\n'
        "    prompt: ${user},\n"
        "  });\n"
        "  return text;\n"
        "}\n",
    ),
    "prompts-yaml": (
        "prompts/default.yaml",
        "${user}:\n"
        "  model: gpt-4o-mini\n"
        "  temperature: 0.2\n"
        "  system: |\n"
        "    ${system}\n"
        "  user: |\n"
        "    {{ ${user} }}\n",
    ),
    "chat-template": (
        "templates/chat.jinja",
        "{% if messages[0]['role'] != 'system' %}<|im_start|>system\n"
        "${system}<|im_end|>\n"
        "{% endif %}{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
        "{{ message['content'] }}<|im_end|>\n"
        "{% endfor %}<|im_start|>assistant\n",
    ),
    "constant-py": (
        "app/prompts.py",
        'SYSTEM_PROMPT = """${system}"""\n'
        "\n"
        "\n"
        "def build_messages(${user}: str, context: str) -> list[dict[str, str]]:\n"
        "    return [\n"
        '        {"role": "system", "content": SYSTEM_PROMPT},\n'
        '        {"role": "user", "content": f"Context: {context}\\n\\n{${user}}"},\n'
        "    ]\n",
    ),
    "curl": (
        "docs/api.sh",
        "curl https://api.openai.com/v1/chat/completions \\\n"
        '  -H "Content-Type: application/json" \\\n'
        '  -H "Authorization: Bearer $$OPENAI_API_KEY" \\\n'
        "  -d '{\n"
        '    "model": "gpt-4o-mini",\n'
        '    "messages": [\n'
        '      {"role": "system", "content": "${system}"},\n'
        '      {"role": "user", "content": "<${user}>"}\n'
        "    ]\n"
        "  }'\n",
    ),
}
_FENCES = {".py": "python", ".js": "javascript", ".ts": "typescript", ".yaml": "yaml", ".sh": "bash"}


def _in_readme(rng: random.Random, path: str, code: str, filler: str) -> str:
    fence = next((lang for suffix, lang in _FENCES.items() if path.endswith(suffix)), "")
    block = f"## Usage\n\n```{fence}\n{code}```\n"
    cut = filler.rfind("\n\n", 0, rng.randrange(len(filler) + 1)) + 1 if filler else 0
    return f"{filler[:cut]}\n{block}\n{filler[cut:]}".strip() + "\n"


def prompt_records(fillers: list[str], seed: int = 0, per_shape: int = PER_SHAPE) -> list[dict[str, Any]]:
    """``per_shape`` records per code shape, deterministic for ``seed``: bare, in a README of
    ``fillers`` (the training READMEs' slices) or as a file a diff adds, a third each."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for shape in SHAPES:
        for index in range(per_shape):
            path, template = SHAPES[shape]
            code = Template(template).substitute(system=_system(rng), user=rng.choice(_USER))
            carrier = ("bare", "readme", "diff")[index % 3]
            text = (
                code
                if carrier == "bare"
                else _in_readme(rng, path, code, rng.choice(fillers))
                if carrier == "readme"
                else package_parts.diff([(path, code)])
            )
            how = f"{shape} prompt in {carrier}"
            out.append(
                record("app-prompt", len(out), text, 0, SOURCE, LICENCE, f"{GROUP_PREFIX}{shape}", how)
            )
    return out
