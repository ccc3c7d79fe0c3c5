"""Words and sentences of the user ↔ assistant style of the synthetic set, English and Chinese.

As in ``vocab.py``, every entry is an ``(english, chinese)`` pair so one generator writes both
languages from the same draws. ``REQUESTS`` are what the user says (a planted fact inside a
request for help); ``REPLIES`` are sentences an assistant's long, generic answer is built of,
by topic, sharing the questions' words (name, work, city, book, allergic, ...) without any
value a question asks for; ``ASKS`` are filler requests; ``OTHERS`` are distractor requests
about other people with the same kinds of values.
"""

from __future__ import annotations

from .vocab import POOLS as BASE_POOLS
from .vocab import Pair

__all__ = [
    "ASKS",
    "ASSISTANT_POOLS",
    "CLOSERS",
    "ECHOES",
    "OPENERS",
    "OTHERS",
    "REPLIES",
    "REQUESTS",
]

ASSISTANT_POOLS: dict[str, tuple[Pair, ...]] = {
    **BASE_POOLS,
    "genre": (
        ("bossa nova", "民谣"),
        ("synthwave", "爵士乐"),
        ("bluegrass", "摇滚乐"),
        ("baroque music", "古典乐"),
        ("afrobeat", "电子乐"),
        ("reggae", "说唱"),
    ),
    "diet": (
        ("vegetarian", "素食"),
        ("pescatarian", "只吃海鲜不吃肉"),
        ("vegan", "纯素"),
        ("gluten-free", "无麸质饮食"),
    ),
    "allergen": (
        ("peanuts", "花生"),
        ("shellfish", "虾蟹"),
        ("sesame", "芝麻"),
        ("kiwi", "猕猴桃"),
        ("almonds", "杏仁"),
    ),
    "business": (
        ("bakery", "面包店"),
        ("podcast", "播客"),
        ("bike repair shop", "自行车修理铺"),
        ("tea stall", "茶摊"),
    ),
    "brand": (
        ("Copper Kettle", "铜壶记"),
        ("Quiet Harbor", "静港"),
        ("Maple & Moss", "枫苔"),
        ("Little Compass", "小罗盘"),
        ("Bright Thimble", "亮顶针"),
        ("Paper Lantern", "纸灯笼"),
    ),
    "hotel_area": (
        ("the old harbour district", "老码头一带"),
        ("the university quarter", "大学城附近"),
        ("the riverside promenade", "江边步道附近"),
        ("the hillside gardens", "山腰花园一带"),
    ),
}

# The user's requests that carry a planted fact; the fact is said in passing.
REQUESTS: dict[str, Pair] = {
    "pet": (
        "Can you recommend how to find a good vet nearby? My {animal} {pet} is {age} and keeps "
        "scratching his ears.",
        "能推荐一下怎么找靠谱的宠物医院吗？我家{animal}{pet}{age}岁了，一直在挠耳朵。",
    ),
    "pet_q": ("What is my {animal}'s name?", "我家{animal}叫什么名字？"),
    # Every other conversation asks some questions about the user as a request to the
    # assistant ("Can you remind me ...", "你还记得 ... 吗"): a "you" that asks about the user.
    "pet_q_polite": (
        "Can you remind me what my {animal} is called?",
        "你还记得我家{animal}叫什么名字吗？",
    ),
    "home_q_polite": (
        "Could you remind me which city I live in now?",
        "你能提醒我一下我现在住在哪个城市吗？",
    ),
    "diet_q_polite": (
        "Do you remember what diet I follow?",
        "你还记得我的饮食习惯是什么吗？",
    ),
    "job_q_now_polite": (
        "Can you tell me which company I work for now?",
        "你能告诉我我现在在哪家公司上班吗？",
    ),
    "count": (
        "I'm hosting a {gathering} for {n} guests next month. Could you suggest a simple menu "
        "and a shopping list?",
        "我下个月要办{gathering}，请了{n}位客人。能帮我想个简单的菜单和购物清单吗？",
    ),
    "count_q": (
        "How many guests did I say were coming to my {gathering}?",
        "我说过我的{gathering}要来多少位客人？",
    ),
    "job_start": (
        "I just started as a {job} at {company}. Could you help me write a short bio for the "
        "team page?",
        "我刚在{company}开始做{job}。能帮我写一段放在团队页面上的简短自我介绍吗？",
    ),
    "job_switch": (
        "Quick update: I left {company} and joined {company2} as a {job}. Can you help me "
        "rewrite my profile summary?",
        "跟你说一下，我已经离开{company}，去{company2}做{job}了。能帮我改一下个人简介吗？",
    ),
    "job_q_now": ("Which company do I work for now?", "我现在在哪家公司上班？"),
    "job_q_before": (
        "Where did I work before I joined {company2}?",
        "我加入{company2}之前在哪里工作？",
    ),
    "home_first": (
        "We live in {city} these days. What are some good day trips from here for a weekend?",
        "我们现在住在{city}。周末从这里出发有哪些适合一日游的地方？",
    ),
    "home_move": (
        "We just moved to {city2}! Any ideas for meeting people when you're new in a city?",
        "我们刚搬到{city2}！刚到一个新城市，有什么认识朋友的好办法？",
    ),
    "home_q": ("Which city do I live in now?", "我现在住在哪个城市？"),
    "fav": (
        "My favourite place for {food} is {restaurant}. Can you give me a recipe that tastes "
        "like theirs?",
        "我最喜欢去{restaurant}吃{food}。能给我一个做出类似味道的菜谱吗？",
    ),
    "fav_new": (
        "I've stopped going to {restaurant}; {restaurant2} is my favourite now. What should I "
        "order there next time?",
        "我已经不去{restaurant}了，现在最喜欢{restaurant2}。下次去点什么好？",
    ),
    "fav_q": ("What is my favourite restaurant these days?", "我现在最喜欢哪家餐厅？"),
    "event_today": (
        "I did the {event} today and I'm exhausted. What should I eat to recover?",
        "我今天参加了{event}，累坏了。吃点什么恢复比较好？",
    ),
    "event_last": (
        "Last {weekday} I went to a {event} with my cousin. Can you recommend similar things to "
        "do?",
        "上{weekday}我和表姐去了{event}。能推荐一些类似的活动吗？",
    ),
    "event_q": ("When did I go to the {event}?", "我是哪天去的{event}？"),
    "reading": (
        "I'm reading {book} at the moment. Could you suggest a few questions for my book club?",
        "我最近在读{book}。能帮我的读书会想几个讨论问题吗？",
    ),
    "reading_q": ("Which book was I reading in {month}?", "我{month}在读哪本书？"),
    "sport": (
        "I signed up for {sport} lessons on {weekday}s. What gear should I buy as a beginner?",
        "我报了{sport}课，每{weekday}上课。新手应该买哪些装备？",
    ),
    "sport_q": (
        "Which sports have I signed up for lessons in?",
        "我报名上了哪些运动课？",
    ),
    "sib_city": (
        "My {rel} {sib} lives in {city}. What's a good gift to bring when I visit?",
        "我{rel}{sib}住在{city}。去看望的时候带什么礼物好？",
    ),
    "sib_job": (
        "{sib} just got a job as a {job}! How should I congratulate them?",
        "{sib}刚找到一份{job}的工作！我该怎么祝贺比较好？",
    ),
    "sib_q": (
        "What does my sibling in {city} do for work?",
        "我住在{city}的那个兄弟姐妹是做什么工作的？",
    ),
    "genre": (
        "I mostly listen to {genre}. Could you put together a playlist for cooking dinner?",
        "我平时主要听{genre}。能帮我列一个做晚饭时听的歌单吗？",
    ),
    "genre_q": ("What kind of music do I listen to most?", "我平时最常听哪类音乐？"),
    "diet": (
        "I'm {diet}, so keep that in mind: what can I cook for a dinner with friends?",
        "我是{diet}，请记住这一点：和朋友吃晚饭我可以做些什么？",
    ),
    "diet_q": ("What diet do I follow?", "我的饮食习惯是什么？"),
    "allergy": (
        "I'm allergic to {allergen}. Can you suggest some snacks for a long hike?",
        "我对{allergen}过敏。能推荐一些长途徒步带的零食吗？",
    ),
    "allergy_q": ("What am I allergic to?", "我对什么过敏？"),
    "ask_book": (
        "Can you recommend a novel for my long flight next week?",
        "下周我要坐很久的飞机，能推荐一本小说吗？",
    ),
    "said_book": (
        "For a long flight I'd suggest {book}: it is absorbing without being heavy.",
        "长途飞行的话，我推荐{book}：引人入胜又不沉重。",
    ),
    "said_book_q": (
        "Which novel did you recommend for my flight?",
        "你推荐我在飞机上读哪本小说？",
    ),
    "ask_name": (
        "I'm starting a small {business}. Can you suggest a name?",
        "我准备开一家小{business}。能帮我起个名字吗？",
    ),
    "said_name": (
        'My favourite option would be "{brand}": it is short, warm and easy to remember.',
        "我最推荐“{brand}”这个名字：简短、温暖、好记。",
    ),
    "said_name_q": (
        "What name did you suggest for my {business}?",
        "你给我的{business}建议了什么名字？",
    ),
    "ask_stay": (
        "I'm visiting {city} for three days. Which area should I stay in?",
        "我要去{city}玩三天。住在哪一片比较好？",
    ),
    "said_stay": (
        "In {city} I would stay around {hotel_area}: it is walkable and quiet at night.",
        "在{city}我建议住在{hotel_area}：步行方便，晚上也安静。",
    ),
    "said_stay_q": (
        "Which area did you suggest I stay in when I visit {city}?",
        "我去{city}的时候，你建议我住在哪一片？",
    ),
}

# Distractor requests: the planted facts' kinds of values, about other people.
OTHERS: tuple[Pair, ...] = (
    (
        "My neighbour's {animal} {pet} barks all night. How do I bring it up politely?",
        "邻居家的{animal}{pet}整晚叫。我怎么礼貌地跟他们说？",
    ),
    (
        "My friend {name} works as a {job} at {company}. How do I ask her for a referral?",
        "我朋友{name}在{company}当{job}。我怎么开口请她内推？",
    ),
    (
        "My colleague {name} moved to {city} last month. What's a good housewarming gift?",
        "我同事{name}上个月搬到了{city}。送什么乔迁礼物好？",
    ),
    (
        "{name} says {restaurant} has the best {food}. Is it worth a long drive?",
        "{name}说{restaurant}的{food}最好吃。值得开很远的车去吗？",
    ),
    (
        "My cousin is reading {book} for her book club. What is it about, roughly?",
        "我表妹的读书会在读{book}。这本书大概讲什么？",
    ),
    (
        "{name} is taking {sport} lessons and loves it. Is it a good sport for adults?",
        "{name}在上{sport}课，很喜欢。这项运动适合成年人吗？",
    ),
    (
        "{name} went to a {event} and wants to go again. What should she expect next time?",
        "{name}去了一次{event}，还想再去。下次她要注意什么？",
    ),
    (
        "My roommate only listens to {genre}. How can we share the speaker fairly?",
        "我室友只听{genre}。我们怎么公平地用音箱？",
    ),
    (
        "My nephew is allergic to {allergen}. What should I avoid at his birthday?",
        "我侄子对{allergen}过敏。他生日的时候我要避开什么？",
    ),
    (
        "{name}'s {rel} is a {job} in {city}. Is that a stressful job there?",
        "{name}的{rel}在{city}当{job}。那份工作压力大吗？",
    ),
)

# Filler requests (topic, text): no planted value, the same vocabulary. Fields are drawn from
# the pools, and the reply echoes them (ECHOES), as an assistant does.
ASKS: tuple[tuple[str, Pair], ...] = (
    ("pet", ("What should I feed a young {animal}?", "小{animal}应该喂什么？")),
    ("pet", ("How do I know if a {animal} is sick?", "怎么判断{animal}是不是生病了？")),
    ("food", ("How much food do I need for a {gathering}?", "办{gathering}要准备多少吃的？")),
    ("food", ("What's a good dessert for a {gathering}?", "{gathering}上准备什么甜点好？")),
    ("fitness", ("How do I prepare for a {event}?", "参加{event}之前要怎么准备？")),
    ("fitness", ("What should I wear to a {event}?", "去{event}穿什么好？")),
    ("fitness", ("Is {sport} hard on the knees?", "{sport}伤膝盖吗？")),
    ("travel", ("What is {city} like in winter?", "{city}冬天怎么样？")),
    ("travel", ("What should I see on a first visit to {city}?", "第一次去{city}应该看什么？")),
    (
        "business",
        ("How do small {business} owners find customers?", "开{business}的人怎么找顾客？"),
    ),
    ("reading", ("Is {book} a good pick for a book club?", "{book}适合读书会吗？")),
    ("music", ("What instruments are typical of {genre}?", "{genre}常用哪些乐器？")),
    (
        "health",
        (
            "What snacks are safe for someone allergic to {allergen}?",
            "对{allergen}过敏的人能吃什么零食？",
        ),
    ),
    ("work", ("What does a {job} do all day?", "{job}每天都做些什么？")),
    ("pet", ("How often should a dog see the vet?", "狗狗多久应该去一次宠物医院？")),
    ("pet", ("What are good names for a new pet?", "给新宠物起什么名字好？")),
    ("work", ("How do I ask my manager for feedback?", "我怎么向领导要反馈？")),
    ("work", ("What should a good profile summary say?", "一份好的个人简介应该写什么？")),
    ("home", ("How do I make a small apartment feel bigger?", "怎么让小公寓显得大一点？")),
    ("home", ("Which city neighbourhoods are best for families?", "城市里哪些街区适合家庭住？")),
    (
        "food",
        ("What's a quick dinner I can make in twenty minutes?", "有什么二十分钟能做好的晚饭？"),
    ),
    ("food", ("Which restaurant dishes are easy to copy at home?", "哪些餐厅的菜在家容易做？")),
    ("fitness", ("How do I build a running habit?", "怎么养成跑步的习惯？")),
    ("fitness", ("Which sports are good for beginners?", "哪些运动适合新手？")),
    ("reading", ("How can I read more books each month?", "怎么每个月多读几本书？")),
    ("reading", ("What makes a novel good for a book club?", "什么样的小说适合读书会？")),
    ("travel", ("How do I pack light for a short trip?", "短途旅行怎么轻装出行？")),
    ("travel", ("Which area of a city is best to stay in?", "去一个城市住在哪一片最好？")),
    (
        "family",
        (
            "How do I stay close to a sibling who lives far away?",
            "怎么和住得远的兄弟姐妹保持亲近？",
        ),
    ),
    ("music", ("What kind of music helps with focus?", "什么样的音乐有助于专注？")),
    ("health", ("What are common food allergies in adults?", "成年人常见的食物过敏有哪些？")),
    ("health", ("How much sleep do adults need?", "成年人需要睡多久？")),
    ("money", ("How do I set up a monthly budget?", "怎么做每月预算？")),
    ("money", ("Is it worth paying for a gym membership?", "办健身卡值得吗？")),
)

OPENERS: tuple[Pair, ...] = (
    ("Great question, happy to help.", "好问题，很乐意帮忙。"),
    ("Sure, here are some ideas.", "当然，这里有一些建议。"),
    ("That sounds like a fun thing to plan.", "听起来是件值得好好计划的事。"),
    ("Of course. Let me walk you through it.", "没问题，我一步步跟你说。"),
    ("Thanks for the details, that helps.", "谢谢你提供细节，这很有帮助。"),
)

CLOSERS: tuple[Pair, ...] = (
    ("Let me know if you want me to adjust anything.", "如果需要调整，随时告诉我。"),
    ("I hope this helps, and tell me how it goes.", "希望对你有帮助，结果如何告诉我。"),
    (
        "If you share more details, I can tailor this further.",
        "如果你再多说一些细节，我可以再细化。",
    ),
)

# Sentences of an assistant's reply by topic: the questions' words, no planted value.
REPLIES: dict[str, tuple[Pair, ...]] = {
    "pet": (
        (
            "Look for a vet who explains things clearly and does not rush the visit.",
            "找一位解释清楚、看诊不赶时间的兽医。",
        ),
        (
            "Ear scratching in dogs and cats is often an allergy or a mild infection.",
            "猫狗挠耳朵常常是过敏或轻微感染。",
        ),
        (
            "Ask other pet owners nearby which clinic they trust and why.",
            "问问附近养宠物的人信任哪家诊所，以及原因。",
        ),
        (
            "Write down when the symptoms started so the vet has a clear picture.",
            "记下症状开始的时间，让兽医了解清楚。",
        ),
        (
            "A calm pet name said in a soft voice helps during the exam.",
            "检查时用温柔的声音叫宠物的名字能让它放松。",
        ),
        (
            "Many clinics offer a first check-up at a lower price for new animals.",
            "很多诊所给新来的动物提供优惠的首次体检。",
        ),
        (
            "Keep your pet's vaccination record in one place for every visit.",
            "把宠物的疫苗记录放在一起，每次就诊都带上。",
        ),
        (
            "Regular check-ups matter more than most owners think.",
            "定期体检比大多数主人想象的更重要。",
        ),
    ),
    "work": (
        (
            "A good bio starts with what you do now and what you care about at work.",
            "好的简介先写你现在做什么，以及工作中在乎什么。",
        ),
        (
            "Keep it to three or four sentences; people skim team pages.",
            "控制在三四句话，大家看团队页面都是扫一眼。",
        ),
        (
            "Mention the company's mission only if it connects to your role.",
            "只有和你的职位相关时才提公司的使命。",
        ),
        (
            "A friendly detail outside work makes a profile easier to remember.",
            "加一个工作以外的小细节，简介更容易被记住。",
        ),
        (
            "When you change jobs, update the first line before anything else.",
            "换工作时，先改第一句。",
        ),
        (
            "Avoid listing every tool you know; pick the two that matter.",
            "不要把会用的工具全列出来，挑两个最重要的。",
        ),
        ("Your new colleagues will read it to find common ground.", "新同事会读它来找共同点。"),
        (
            "Ask a colleague to read the draft before you publish it.",
            "发布前请一位同事读一读草稿。",
        ),
    ),
    "home": (
        (
            "Moving to a new city is easier when you keep one weekly routine.",
            "搬到新城市时，保持一个每周固定的习惯会轻松很多。",
        ),
        (
            "Local clubs and volunteer groups are the fastest way to meet people.",
            "本地俱乐部和志愿者团体是认识人最快的方式。",
        ),
        (
            "Day trips by train avoid the parking hassle on weekends.",
            "坐火车一日游可以避免周末停车的麻烦。",
        ),
        (
            "Check the local events calendar; many cities publish one each week.",
            "看看本地活动日历，很多城市每周都会发布。",
        ),
        ("Neighbourhood cafés are good places to become a regular.", "街区咖啡馆很适合成为常客。"),
        (
            "Give yourself a few months before deciding how you feel about a place.",
            "给自己几个月时间，再判断喜不喜欢一个地方。",
        ),
        (
            "Walking the same route each evening makes a new area feel like home.",
            "每晚走同一条路线，新街区会慢慢有家的感觉。",
        ),
        (
            "Lakes, old towns and markets are classic weekend destinations.",
            "湖泊、古镇和集市是经典的周末去处。",
        ),
    ),
    "food": (
        (
            "Restaurant flavour usually comes from more salt, more fat and high heat.",
            "餐厅的味道通常来自更多的盐、油和大火。",
        ),
        (
            "Toast your spices first; it makes a home recipe taste much deeper.",
            "先把香料炒香，家常菜谱的味道会更有层次。",
        ),
        (
            "A good shopping list groups items by where they are in the store.",
            "好的购物清单按商店里的位置分类。",
        ),
        (
            "For a group, one big dish and two sides is plenty.",
            "招待一群人，一道大菜配两道小菜就够了。",
        ),
        (
            "Ask the staff what regulars order; it is rarely on the front page of the menu.",
            "问问店员常客点什么，通常不在菜单首页。",
        ),
        (
            "Prepare sauces the day before so the evening stays relaxed.",
            "前一天把酱料准备好，当晚就轻松了。",
        ),
        (
            "Label anything with common allergens when guests serve themselves.",
            "客人自取时，含常见过敏原的菜要贴标签。",
        ),
        (
            "Fresh herbs at the end lift almost any dish.",
            "出锅前放点新鲜香草，几乎什么菜都会更好吃。",
        ),
    ),
    "fitness": (
        (
            "After a long race, eat carbohydrates and protein within an hour.",
            "长距离比赛后一小时内补充碳水和蛋白质。",
        ),
        (
            "Beginners should buy shoes first and wait on the expensive gear.",
            "新手先买鞋，贵的装备可以等等。",
        ),
        ("Lessons once a week are enough to make steady progress.", "每周上一次课就足以稳步进步。"),
        (
            "Drink water slowly over the day rather than all at once.",
            "一天里慢慢喝水，不要一次喝太多。",
        ),
        (
            "Gentle stretching the next day helps sore legs recover.",
            "第二天轻柔拉伸有助于酸痛的腿恢复。",
        ),
        (
            "Rent equipment for the first month to see if you enjoy the sport.",
            "第一个月先租装备，看看自己是否喜欢这项运动。",
        ),
        ("Sleep is the most underrated part of recovery.", "睡眠是恢复中最被低估的部分。"),
        (
            "Track how you feel after each session, not only your times.",
            "记录每次训练后的感受，而不只是成绩。",
        ),
    ),
    "reading": (
        (
            "Good book club questions ask what a character wanted and why.",
            "好的读书会问题会问角色想要什么、为什么。",
        ),
        (
            "Ask members which scene they would cut, and which they would keep.",
            "问问大家会删掉哪一幕，保留哪一幕。",
        ),
        (
            "A novel for a flight should have short chapters and a strong voice.",
            "适合飞机上读的小说章节要短、叙述要有力。",
        ),
        (
            "Reading twenty pages before bed adds up to many books a year.",
            "每晚睡前读二十页，一年下来就是很多本书。",
        ),
        (
            "Audiobooks count too, especially on long commutes.",
            "有声书也算，尤其是通勤很长的时候。",
        ),
        (
            "Compare the ending with what you expected halfway through.",
            "把结局和你读到一半时的预期比一比。",
        ),
        ("Keep a short list of books friends recommend.", "把朋友推荐的书记在一个短清单里。"),
        (
            "Discussing the setting often opens up the whole story.",
            "讨论故事背景常常能打开整个故事。",
        ),
    ),
    "travel": (
        (
            "Stay somewhere you can walk to dinner; it saves time every evening.",
            "住在能步行去吃晚饭的地方，每晚都省时间。",
        ),
        (
            "Three days in a city is enough for two neighbourhoods and one museum.",
            "在一个城市待三天，够逛两个街区和一个博物馆。",
        ),
        ("Pack one outfit per day plus a warm layer.", "每天一套衣服，再加一件保暖的外套。"),
        ("Book the first night close to the station.", "第一晚订在车站附近。"),
        (
            "Quiet areas cost a little more but you sleep much better.",
            "安静的区域贵一点，但睡得好很多。",
        ),
        (
            "Check how late public transport runs before choosing an area.",
            "选区域前先查公共交通运营到几点。",
        ),
        (
            "A long flight is easier with a book, water and a fixed sleep plan.",
            "长途飞行带本书、带水、定好睡觉时间会轻松很多。",
        ),
        (
            "Local markets are the best breakfast in most cities.",
            "在大多数城市，本地集市就是最好的早餐。",
        ),
    ),
    "family": (
        (
            "A handwritten card often means more than an expensive gift.",
            "一张手写卡片往往比昂贵的礼物更有意义。",
        ),
        (
            "Something from your own city is a thoughtful gift when you visit.",
            "拜访时带一件自己城市的特产是很贴心的礼物。",
        ),
        (
            "Congratulate them on the new job with a call before a message.",
            "祝贺新工作时先打个电话，再发消息。",
        ),
        (
            "A shared dinner is a good way to celebrate a new role.",
            "一起吃顿饭是庆祝新职位的好方式。",
        ),
        (
            "Siblings who live far apart stay close through small regular habits.",
            "住得远的兄弟姐妹靠小而固定的习惯保持亲近。",
        ),
        ("Ask what they are looking forward to in the new job.", "问问他们在新工作里最期待什么。"),
        ("A photo book of old trips makes a warm gift.", "一本旧旅行的相册是很温暖的礼物。"),
        ("Plan the visit around their schedule, not yours.", "按他们的时间安排拜访，而不是你的。"),
    ),
    "music": (
        (
            "A cooking playlist works best with a steady, relaxed tempo.",
            "做饭的歌单最好节奏平稳放松。",
        ),
        (
            "Mix a few familiar songs with new ones so it never feels repetitive.",
            "熟悉的歌和新歌混着放，就不会觉得重复。",
        ),
        ("Instrumental tracks keep conversation easy at dinner.", "纯音乐能让晚饭时聊天更自在。"),
        ("About forty minutes of music covers most dinners.", "大约四十分钟的音乐够一顿晚饭。"),
        (
            "Streaming services make shared playlists easy to edit.",
            "流媒体平台的共享歌单很容易编辑。",
        ),
        (
            "The genre you love most can anchor the start and the end.",
            "你最爱的曲风可以放在开头和结尾。",
        ),
    ),
    "business": (
        (
            "A good name is short, easy to spell and says something about the feeling.",
            "好名字要简短、好写，并能传达一种感觉。",
        ),
        (
            "Check that the name is free as a web address before you print anything.",
            "印任何东西之前，先确认名字对应的网址还没被注册。",
        ),
        (
            "Say the name out loud on the phone to see if people understand it.",
            "打电话时把名字说出来，看看别人能不能听懂。",
        ),
        ("Avoid names that only make sense to you.", "避免只有你自己才懂的名字。"),
        (
            "Small businesses do well with names that sound friendly and local.",
            "小店的名字亲切、有本地感会更好。",
        ),
        ("Test two or three names with future customers.", "拿两三个名字问问未来的顾客。"),
    ),
    "health": (
        (
            "Read labels carefully; allergens hide in sauces and snacks.",
            "仔细看标签，过敏原常藏在酱料和零食里。",
        ),
        (
            "Nuts, seeds and dried fruit are light for long walks.",
            "坚果、种子和果干适合长途步行，很轻便。",
        ),
        ("Carry more water than you think you need on a hike.", "徒步时带的水要比你以为的多。"),
        (
            "A diet that fits your week is easier to keep than a strict plan.",
            "符合你日常节奏的饮食比严格计划更容易坚持。",
        ),
        (
            "Tell friends about your diet before they plan a dinner.",
            "朋友安排晚饭前，先告诉他们你的饮食习惯。",
        ),
        (
            "Beans, lentils and tofu make a filling main dish.",
            "豆类、扁豆和豆腐可以做成很饱腹的主菜。",
        ),
        (
            "Cook one dish everyone can eat rather than separate plates.",
            "做一道大家都能吃的菜，而不是分开做。",
        ),
        (
            "Pack snacks in small bags so you eat a little every hour.",
            "零食分装成小袋，每小时吃一点。",
        ),
    ),
    "money": (
        ("Start a budget by writing down last month's spending.", "做预算先把上个月的花销记下来。"),
        (
            "Fixed costs first, then savings, then everything else.",
            "先固定支出，再储蓄，最后是其他开销。",
        ),
        (
            "A membership is worth it if you go at least twice a week.",
            "每周至少去两次，办卡才划算。",
        ),
        ("Review the plan after a month and adjust it.", "一个月后回顾计划再调整。"),
        (
            "Small automatic savings add up faster than big promises.",
            "小额自动储蓄比大目标积累得更快。",
        ),
        ("Compare prices for the same thing in three places.", "同样的东西比较三个地方的价格。"),
    ),
}

# Sentences of a reply that repeat the request's words (never a value a question asks for:
# the fields here are only ones that questions name, not ones they ask).
ECHOES: dict[str, tuple[Pair, ...]] = {
    "animal": (
        (
            "A {animal} that scratches a lot should be checked for mites and dry skin.",
            "{animal}经常挠的话，要检查有没有螨虫或皮肤干燥。",
        ),
        (
            "Most vets can see a {animal} within a day or two.",
            "大多数兽医一两天内就能给{animal}看诊。",
        ),
        (
            "Every {animal} has its own temperament, so watch how yours reacts.",
            "每只{animal}脾气都不同，看看你家的反应。",
        ),
    ),
    "gathering": (
        (
            "For a {gathering}, plan one main dish per eight guests.",
            "办{gathering}，每八位客人准备一道主菜。",
        ),
        (
            "Guests at a {gathering} usually eat more than you expect early on.",
            "{gathering}上客人一开始往往吃得比你想的多。",
        ),
        (
            "Send a reminder to the guests two days before the {gathering}.",
            "{gathering}前两天给客人发个提醒。",
        ),
    ),
    "event": (
        (
            "After a {event}, give yourself a quiet day before anything demanding.",
            "参加完{event}后，先安静休息一天再做别的。",
        ),
        (
            "A {event} is a great way to meet people with the same interest.",
            "{event}是认识同好的好机会。",
        ),
        (
            "People who enjoy a {event} often like workshops and festivals too.",
            "喜欢{event}的人往往也喜欢工作坊和节庆活动。",
        ),
    ),
    "business": (
        ("A {business} lives on word of mouth in its first year.", "{business}第一年主要靠口碑。"),
        (
            "The name of a {business} should fit on a small sign.",
            "{business}的名字要能写在一块小招牌上。",
        ),
    ),
    "city": (
        (
            "{city} is easy to explore on foot if you stay central.",
            "住在市中心的话，{city}步行就很好逛。",
        ),
        (
            "Many visitors to {city} underestimate how busy weekends are.",
            "很多去{city}的游客低估了周末的人流。",
        ),
        (
            "In {city}, the areas near the river are the liveliest in the evening.",
            "在{city}，靠河的区域晚上最热闹。",
        ),
    ),
    "sib": (
        ("{sib} will appreciate that you thought about it.", "{sib}会感受到你的用心。"),
        ("Ask {sib} what they would enjoy most.", "问问{sib}最喜欢什么。"),
    ),
    "book": (
        ("Readers of {book} often argue about its ending.", "读过{book}的人常常争论它的结局。"),
        (
            "{book} works well for discussion because its characters disagree.",
            "{book}适合讨论，因为角色之间观点不同。",
        ),
    ),
    "sport": (
        (
            "{sport} is easier to learn with a coach in the first weeks.",
            "{sport}前几周跟着教练学会容易很多。",
        ),
        (
            "Beginners in {sport} progress fastest with short, regular sessions.",
            "{sport}新手短而规律地练习进步最快。",
        ),
    ),
    "job": (("A {job} needs good habits to avoid burning out.", "{job}需要好习惯来避免倦怠。"),),
    "allergen": (
        (
            "People allergic to {allergen} should check every label.",
            "对{allergen}过敏的人要检查每个标签。",
        ),
    ),
    "genre": (("{genre} has a long history and many sub-styles.", "{genre}历史悠久，分支很多。"),),
}
