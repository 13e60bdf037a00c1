"""The knowledge fixture: 25 hand-written notes, ~180 generated distractors, 20 queries."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

HANDWRITTEN = Path(__file__).parent / "fixtures" / "knowledge"

# (query, expected sources): zh/en; titles, body-only facts and tag-only matches.
QUERIES: list[tuple[str, set[str]]] = [
    ("redis 主从切换", {"redis-sentinel-failover.md"}),
    ("replication slot WAL disk full", {"pg-disk-full.md"}),
    ("OOMKilled exit code 137", {"k8s-crashloop.md"}),
    ("证书续期 wildcard", {"cert-renewal.md"}),
    ("退款 幂等", {"meeting-2024-03-12-payment.md"}),
    ("OKR", {"meeting-q3-goal-review.md"}),
    ("learning to rank NDCG", {"meeting-search-design-review.md"}),
    ("两阶段提交", {"reading-ddia.md"}),
    ("农业革命", {"reading-sapiens.md"}),
    ("anchoring loss aversion", {"reading-thinking-fast-and-slow.md"}),
    ("土地财政", {"reading-zhishen-shinei.md"}),
    ("红烧肉怎么做", {"recipe-hongshaorou.md"}),
    ("郫县豆瓣", {"recipe-mapo-tofu.md"}),
    ("banana bread oven temperature", {"recipe-banana-bread.md"}),
    ("冷萃 比例", {"drink-cold-brew.md"}),
    ("岚山小火车", {"travel-kyoto.md"}),
    ("Sintra Pena Palace tickets", {"travel-lisbon.md"}),
    ("asyncio wait_for cancel", {"code-asyncio-timeout.md"}),
    ("force-with-lease", {"code-git-rebase.md"}),
    ("熊猫基地几点去", {"travel-chengdu.md"}),
]

SERVICES = [
    "nginx",
    "redis",
    "postgres",
    "mysql",
    "kafka",
    "elasticsearch",
    "kubernetes",
    "etcd",
    "rabbitmq",
    "minio",
    "prometheus",
    "grafana",
    "jenkins",
    "clickhouse",
    "consul",
]
ACTIONS = [
    (
        "重启",
        "restart",
        "systemctl restart {s}; 观察 5 分钟错误率",
        "drain traffic, then restart {s}",
    ),
    (
        "扩容",
        "scale out",
        "新增两个 {s} 节点并加入集群，检查数据均衡",
        "add two {s} nodes, rebalance",
    ),
    (
        "备份与恢复",
        "backup and restore",
        "每天凌晨 3 点全量备份 {s} 到对象存储，保留 14 天",
        "nightly {s} snapshot to object storage, keep 14 days",
    ),
    (
        "升级",
        "upgrade",
        "先升级 staging 的 {s}，跑一天回归再升级生产",
        "upgrade {s} in staging first",
    ),
]
PROJECTS = ["支付网关", "搜索推荐", "移动端重构", "Data platform", "Onboarding revamp", "客服系统"]
TOPICS = [
    "上线时间表",
    "监控告警噪音",
    "on-call 排班",
    "API versioning",
    "cost review",
    "灰度发布",
    "测试覆盖率",
    "hiring plan",
    "数据口径对齐",
    "incident follow-ups",
]
PEOPLE = ["王磊", "陈静", "Tom", "Alice", "Bob", "李娜", "张伟", "Priya"]
BOOKS = [
    ("《原则》", "读书", "极度透明、可信度加权决策"),
    ("《穷查理宝典》", "读书", "多元思维模型、逆向思考"),
    ("The Pragmatic Programmer", "reading", "tracer bullets, DRY, broken windows"),
    ("Clean Architecture", "reading", "dependency rule, boundaries, use cases"),
    ("《三体》", "小说", "黑暗森林法则、猜疑链"),
    ("《活着》", "小说", "福贵一生的苦难与坚韧"),
    ("Atomic Habits", "reading", "habit stacking, make it obvious, 1% better"),
    ("Deep Work", "reading", "attention residue, shutdown ritual"),
    ("《枪炮、病菌与钢铁》", "历史", "地理决定论、驯化动植物的分布"),
    ("The Mythical Man-Month", "reading", "Brooks's law, second-system effect"),
    ("《非暴力沟通》", "读书", "观察、感受、需要、请求"),
    ("Site Reliability Engineering", "reading", "error budgets, toil, SLOs"),
    ("《长安的荔枝》", "小说", "小吏李善德的荔枝转运"),
    ("Zero to One", "reading", "monopoly, secrets, last mover advantage"),
    ("《金字塔原理》", "读书", "结论先行、以上统下、MECE"),
    ("Accelerate", "reading", "deployment frequency, lead time, MTTR, change failure rate"),
    ("《乡土中国》", "社会", "差序格局、礼治秩序"),
    ("Refactoring", "reading", "code smells, extract function"),
    ("《明朝那些事儿》", "历史", "朱元璋、王阳明、张居正"),
    ("Staff Engineer", "reading", "archetypes, sponsorship"),
]
DISHES = [
    ("番茄炒蛋", "番茄、鸡蛋、葱", "鸡蛋先炒到半凝固盛出"),
    ("宫保鸡丁", "鸡腿肉、花生、干辣椒", "调碗汁：糖醋生抽淀粉"),
    ("可乐鸡翅", "鸡翅、可乐、姜", "鸡翅两面划刀，煎到金黄"),
    ("清蒸鲈鱼", "鲈鱼、葱姜、蒸鱼豉油", "水开后蒸 8 分钟"),
    ("酸辣土豆丝", "土豆、醋、干辣椒", "土豆丝泡水去淀粉"),
    ("糖醋排骨", "排骨、冰糖、香醋", "排骨焯水后炸到表面微焦"),
    ("鱼香肉丝", "猪里脊、木耳、胡萝卜", "泡椒炒出红油"),
    ("蒜蓉西兰花", "西兰花、蒜", "焯水加少许盐和油保持翠绿"),
    ("回锅肉", "五花肉、蒜苗、豆豉", "五花肉煮到八成熟切薄片"),
    (
        "Spaghetti carbonara",
        "guanciale, eggs, pecorino",
        "take the pan off the heat before adding the eggs",
    ),
    (
        "Shakshuka",
        "eggs, tomatoes, cumin, peppers",
        "simmer the sauce 10 minutes, crack the eggs in",
    ),
    ("Chocolate chip cookies", "butter, brown sugar, chocolate", "chill the dough for 24 hours"),
    (
        "Thai green curry",
        "chicken, coconut milk, green curry paste",
        "fry the paste in coconut cream first",
    ),
    ("Sourdough loaf", "starter, bread flour, salt", "bulk ferment until 50% rise"),
    ("地三鲜", "茄子、土豆、青椒", "茄子过油后再烧"),
    ("手撕包菜", "包菜、五花肉、干辣椒", "大火快炒，沿锅边淋醋"),
    ("冬瓜排骨汤", "排骨、冬瓜、姜", "小火煲一个半小时"),
    ("Pancakes", "flour, milk, eggs, baking powder", "rest the batter 10 minutes"),
    ("Guacamole", "avocado, lime, onion, cilantro", "mash roughly, salt at the end"),
    ("酸菜鱼", "草鱼、酸菜、泡椒", "鱼片用蛋清淀粉上浆"),
    ("葱油拌面", "细面、小葱、生抽、老抽", "小火慢熬葱油到焦黄"),
    ("小炒黄牛肉", "黄牛肉、小米辣、芹菜", "牛肉逆纹切片腌 15 分钟"),
    ("Miso soup", "dashi, miso, tofu, wakame", "never boil after adding miso"),
    ("Lemon drizzle cake", "butter, sugar, lemons", "pour the syrup while warm"),
    ("红豆沙", "红豆、冰糖、陈皮", "红豆提前泡一夜"),
]
PLACES = [
    ("大阪", "日本", "黑门市场、环球影城、道顿堀"),
    ("东京", "日本", "筑地场外市场、浅草寺、涩谷"),
    ("大理", "中国", "洱海骑行、双廊、苍山索道"),
    ("西安", "中国", "兵马俑、回民街、城墙骑车"),
    ("厦门", "中国", "鼓浪屿、沙坡尾、环岛路"),
    ("Reykjavik", "Iceland", "Golden Circle, Blue Lagoon, northern lights"),
    ("Barcelona", "Spain", "Sagrada Familia, Park Güell, tapas in El Born"),
    ("新加坡", "新加坡", "滨海湾花园、牛车水、圣淘沙"),
    ("Porto", "Portugal", "Livraria Lello, port wine cellars, Ribeira"),
    ("清迈", "泰国", "古城寺庙、周日夜市、素贴山"),
    ("Vancouver", "Canada", "Stanley Park, Granville Island"),
    ("杭州", "中国", "西湖、灵隐寺、龙井村喝茶"),
    ("Istanbul", "Turkey", "Hagia Sophia, Grand Bazaar, Bosphorus ferry"),
    ("首尔", "韩国", "景福宫、弘大、广藏市场"),
    ("Prague", "Czechia", "Charles Bridge at dawn, Old Town Square"),
    ("桂林", "中国", "漓江竹筏、阳朔骑行、遇龙河"),
    ("Vienna", "Austria", "Schönbrunn, coffee houses, opera standing tickets"),
    ("重庆", "中国", "洪崖洞、李子坝轻轨、火锅"),
    ("北海道", "日本", "小樽运河、富良野花田、札幌拉面"),
    ("Amsterdam", "Netherlands", "canal ring, Rijksmuseum, cycling"),
]
SNIPPETS = [
    ("python", "dataclass 默认值用 field(default_factory=list)"),
    ("python", "functools.lru_cache for memoisation"),
    ("python", "pathlib glob vs rglob"),
    ("python", "contextlib.suppress 代替空 except"),
    ("python", "itertools.groupby 需要先排序"),
    ("go", "context.WithTimeout and defer cancel()"),
    ("go", "errgroup 并发请求并收集第一个错误"),
    ("go", "sync.Once for lazy init"),
    ("bash", "set -euo pipefail at the top of scripts"),
    ("bash", "trap 'rm -rf $tmp' EXIT 清理临时目录"),
    ("docker", "multi-stage build to shrink images"),
    ("docker", "docker system prune 清理磁盘"),
    ("sql", "EXPLAIN ANALYZE 看实际执行计划"),
    ("sql", "partial index WHERE deleted_at IS NULL"),
    ("git", "git bisect run 自动定位坏提交"),
    ("git", "git worktree add 同时开两个分支"),
    ("javascript", "Promise.allSettled vs Promise.all"),
    ("typescript", "satisfies operator keeps literal types"),
    ("rust", "? operator and anyhow::Context"),
    ("vim", ":g/pattern/d 删除匹配行"),
    ("jq", "jq -r '.items[] | .name' 提取字段"),
    ("awk", "awk '{s+=$3} END {print s}' 求和"),
    ("kubectl", "kubectl rollout undo 回滚 deployment"),
    ("curl", "curl -w '%{time_total}' 测延迟"),
    ("regex", "非贪婪匹配 .*? 与回溯"),
]


def _note(title: str, tags: list[str], day: int, body: str) -> str:
    stamp = f"'2024-{1 + day % 12:02d}-{1 + day % 28:02d}T09:{day % 60:02d}:00+08:00'"
    tag_list = ", ".join(json.dumps(t, ensure_ascii=False) for t in tags)
    return (
        f"---\ntitle: {json.dumps(title, ensure_ascii=False)}\ntags: [{tag_list}]\n"
        f"created: {stamp}\nupdated: {stamp}\n---\n\n{body.strip()}\n"
    )


def _runbooks(rng: random.Random) -> list[tuple[str, str]]:
    out = []
    for i, svc in enumerate(SERVICES):
        for j, (zh, en, zh_step, en_step) in enumerate(ACTIONS):
            if (i + j) % 2:
                title, body = (
                    f"{svc} {zh}操作手册",
                    (
                        f"适用于生产环境的 {svc}。\n\n1. 在 #ops 频道通知 on-call 和相关业务方。\n"
                        f"2. {zh_step.format(s=svc)}。\n3. 检查 Grafana 面板上的延迟和错误率。\n"
                        "4. 有异常立即回滚，并在事故记录里补充时间线。\n\n"
                        f"上次执行人：{rng.choice(PEOPLE)}。"
                    ),
                )
            else:
                title, body = (
                    f"{svc} {en} runbook",
                    (
                        f"Scope: production {svc}.\n\n1. Announce in #ops and page the on-call.\n"
                        f"2. {en_step.format(s=svc)}.\n"
                        "3. Watch latency and error rate dashboards.\n"
                        f"4. Roll back on any regression and note the timeline.\n\nLast run by "
                        f"{rng.choice(PEOPLE)}."
                    ),
                )
            out.append(
                (
                    f"runbook-{svc}-{en.replace(' ', '-')}.md",
                    _note(title, [svc, "ops", "runbook"], i * 4 + j, body),
                )
            )
    return out


def _meetings(rng: random.Random) -> list[tuple[str, str]]:
    out = []
    for i, proj in enumerate(PROJECTS):
        for week in range(5):
            date = f"2024-{4 + week:02d}-{3 + i * 4:02d}"
            topics, people = rng.sample(TOPICS, 3), rng.sample(PEOPLE, 3)
            lines = "\n".join(f"- {t}：{rng.choice(PEOPLE)} 跟进，下周同步进展。" for t in topics)
            title = f"{proj}周会 {date}" if i % 2 == 0 else f"Weekly sync — {proj} {date}"
            body = f"参会 Attendees: {'、'.join(people)}\n\n## 讨论 Discussion\n{lines}\n"
            out.append((f"meeting-{i}-{date}.md", _note(title, ["meeting"], i * 5 + week, body)))
    return out


def _others() -> list[tuple[str, str]]:
    out = []
    for i, (book, tag, idea) in enumerate(BOOKS):
        body = f"核心观点 Key ideas: {idea}。\n\n我的想法：值得再读一遍，把其中的方法用到工作里。\n"
        out.append((f"book-{i:02d}.md", _note(f"{book} 读书笔记", [tag, "notes"], i, body)))
    for i, (dish, ing, tip) in enumerate(DISHES):
        body = f"材料 Ingredients: {ing}\n\n要点 Tip: {tip}。\n\n做法简单，适合工作日晚饭。\n"
        out.append((f"dish-{i:02d}.md", _note(dish, ["菜谱" if i % 2 else "recipe"], i, body)))
    for i, (city, country, spots) in enumerate(PLACES):
        body = f"{country}。必去 Must see: {spots}。\n\n住宿订在市中心，公共交通很方便。\n"
        out.append((f"trip-{i:02d}.md", _note(f"{city} 旅行计划", ["旅行", "travel"], i, body)))
    for i, (lang, text) in enumerate(SNIPPETS):
        body = f"```{lang}\n# {text}\n```\n\n{text}.\n"
        out.append((f"snippet-{i:02d}.md", _note(f"{lang}: {text}", [lang, "snippet"], i, body)))
    return out


def write_fixture(root: Path) -> int:
    """Write every fixture note under `root` deterministically; returns how many were written."""
    root.mkdir(parents=True, exist_ok=True)
    for src in sorted(HANDWRITTEN.glob("*.md")):
        shutil.copyfile(src, root / src.name)
    generated = _runbooks(random.Random(7)) + _meetings(random.Random(8)) + _others()
    for name, text in generated:
        (root / name).write_text(text, encoding="utf-8")
    return len(generated) + len(list(HANDWRITTEN.glob("*.md")))
